#pragma once

#include "protocol/json_rpc.hpp"
#include "protocol/revision.hpp"

#include <optional>
#include <string>

namespace gatehouse::protocol {

// The schema rules of both revisions for what a plugin's answer puts on the
// wire, checked by hand on the already parsed answer: a client's typed
// parser refuses the whole message for one broken block, so the host finds
// it first and answers with a tool error instead. Each returns a sentence
// naming the JSON pointer and the fault, or nothing.

// One content block (text, image, audio, resource_link, resource) at `pointer`.
std::optional<std::string> content_block_problem(const Json& block, const std::string& pointer);

// A plugin's CallToolResult: its content blocks, isError (a boolean),
// structuredContent (an object for 2025-11-25), _meta (an object) and
// resultType (the host's: a plugin asks for input by its status, never by
// writing resultType).
std::optional<std::string> tool_result_problem(const Json& result, Revision revision);

} // namespace gatehouse::protocol
