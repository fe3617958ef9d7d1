#pragma once

#include "gate/gate_pipeline.hpp"
#include "plugins/tool_registry.hpp"
#include "protocol/request.hpp"

namespace gatehouse::protocol {

// tools/call from the registry lookup to the encoded CallToolResult:
// lookup -> gate -> input validation -> plugin -> output validation.
// Throws ProtocolError only for the protocol tier (unknown tool, malformed
// params); everything else is a tool result.
class ToolCall {
public:
    ToolCall(const plugins::ToolRegistry& registry, const gate::GatePipeline& gate)
        : registry_(registry), gate_(gate) {}

    Json run(Request& request) const;

private:
    Json invoke(const plugins::Tool& tool, const Json& arguments, Request& request,
                const gate::GateFindings& findings) const;

    const plugins::ToolRegistry& registry_;
    const gate::GatePipeline& gate_;
};

// A tool error: isError with one text block the agent can act on.
Json tool_error(const std::string& text);

} // namespace gatehouse::protocol
