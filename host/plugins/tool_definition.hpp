#pragma once

#include "plugins/tool.hpp"

#include <nlohmann/json.hpp>

namespace gatehouse::plugins {

// The full registry definition of one tool: name, title, description, domain,
// inputSchema, outputSchema, scope, required_scopes, risk, platform_version
// (its plugin's version). describe_tool answers it and `gatehouse docs`
// prints it, so a reference page and the running host cannot disagree.
nlohmann::json tool_definition(const Tool& tool);

} // namespace gatehouse::plugins
