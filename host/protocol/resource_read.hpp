#pragma once

#include "plugins/tool_registry.hpp"
#include "protocol/request.hpp"

namespace gatehouse::protocol {

// resources/read: the URI to a resource (exact) or a template (matched, in
// the registry's order), the plugin's read, and its answer checked into a
// ReadResourceResult. An unknown URI is the revision's resource-not-found
// error carrying {"uri"}: -32602 in 2026-07-28, -32002 in 2025-11-25.
class ResourceRead {
public:
    explicit ResourceRead(const plugins::ToolRegistry& registry) : registry_(registry) {}

    Json run(Request& request) const;

private:
    const plugins::ToolRegistry& registry_;
};

} // namespace gatehouse::protocol
