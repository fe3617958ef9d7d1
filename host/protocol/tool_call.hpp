#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/rate_limiter.hpp"
#include "plugins/tool_registry.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/request.hpp"
#include "protocol/tool_disclosure.hpp"

namespace gatehouse::protocol {

// tools/call from the registry lookup to the encoded CallToolResult:
// lookup -> rate limit -> string bounds -> gate -> input validation ->
// the plugin's in-flight cap -> plugin -> output validation.
// Throws ProtocolError only for the protocol tier (unknown tool, malformed
// params); everything else is a tool result.
class ToolCall {
public:
    ToolCall(const plugins::ToolRegistry& registry, const gate::GatePipeline& gate, const config::Limits& limits,
             limits::RateLimiter& rate_limiter, const InputRounds& input_rounds,
             const ToolDisclosure* disclosure = nullptr)
        : registry_(registry), gate_(gate), max_string_bytes_(limits.max_string_bytes), rate_limiter_(rate_limiter),
          input_rounds_(input_rounds), disclosure_(disclosure) {}

    Json run(Request& request) const;

private:
    // A family's tool, else a host meta tool of that name (or null).
    const plugins::Tool* find(const std::string& name) const;

    Json run_meta_tool(const plugins::Tool& tool, const Json& arguments, Request& request) const;

    Json invoke(const plugins::Tool& tool, const Json& arguments, Request& request, const gate::GateFindings& findings,
                const Json& sent_arguments) const;

    const plugins::ToolRegistry& registry_;
    const gate::GatePipeline& gate_;
    std::size_t max_string_bytes_;
    limits::RateLimiter& rate_limiter_;
    const InputRounds& input_rounds_;
    const ToolDisclosure* disclosure_;
};

// The token layer of scopes, decided here for every route to a tool: a
// verified access token without the tool's scope gets INSUFFICIENT_SCOPE
// (an HTTP transport answers a direct call with 403 and a step-up challenge
// from the same refusal). The store owner's grants are the gate's own, later check.
std::optional<gate::Refusal> scope_refusal(const plugins::Tool& tool, const auth::Principal& principal);

// A tool error: isError with one text block the agent can act on.
Json tool_error(const std::string& text);

} // namespace gatehouse::protocol
