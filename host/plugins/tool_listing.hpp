#pragma once

#include "plugins/tool.hpp"

namespace gatehouse::plugins {

// Builds tool.listing, the MCP Tool object tools/list publishes, from what the
// tool is now: its plugin's declaration with the operator's overrides laid
// over it. With sessions configured, a gated tool's inputSchema gains the
// `session` argument the gate checks.
void publish_listing(Tool& tool, bool sessions);

} // namespace gatehouse::plugins
