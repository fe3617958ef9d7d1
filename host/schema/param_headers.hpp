#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gatehouse::schema {

// One x-mcp-header annotation of a tool's inputSchema: the header's name part
// and the chain of property names leading to the annotated argument.
struct ParamHeader {
    std::string name;
    std::vector<std::string> path;
};

// The annotations of an inputSchema, found through `properties` only (the
// spec allows them nowhere else). Throws std::invalid_argument naming what is
// wrong with a misplaced, duplicate or malformed annotation.
std::vector<ParamHeader> find_param_headers(const nlohmann::json& input_schema);

} // namespace gatehouse::schema
