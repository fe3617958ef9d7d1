#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/rate_limiter.hpp"
#include "plugins/tool_registry.hpp"
#include "session/session_service.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/request.hpp"
#include "protocol/request_decoder.hpp"
#include "protocol/tool_disclosure.hpp"

namespace gatehouse::protocol {

// tools/call from its decoded target (ToolTarget) to the encoded
// CallToolResult: scope -> rate limit -> string bounds -> gate -> input
// validation -> the plugin's in-flight cap -> plugin -> result shape and
// output validation. Throws ProtocolError only for the protocol tier
// (malformed params); everything else is a tool result.
class ToolCall {
public:
    struct Parts {
        const gate::GatePipeline& gate;
        const RequestDecoder& decoder;    // call_tool resolves the tool it forwards to
        const ToolDisclosure& disclosure; // answers the other meta tools
        limits::RateLimiter& rate_limiter;
        const InputRounds& input_rounds;
        session::SessionService* sessions = nullptr; // the session services of a call; null: none
    };

    ToolCall(Parts parts, std::size_t max_string_bytes) : parts_(parts), max_string_bytes_(max_string_bytes) {}

    // request.call is the decoded target; the tool is never looked up again.
    Json run(Request& request) const;

private:
    Json run_meta_tool(const plugins::Tool& tool, const Json& arguments, Request& request) const;

    Json invoke(const plugins::Tool& tool, const Json& arguments, Request& request, const gate::GateFindings& findings,
                const Json& sent_arguments) const;

    Parts parts_;
    std::size_t max_string_bytes_;
};

// The token layer of scopes, decided here for every route to a tool: a
// verified access token without the tool's scope gets INSUFFICIENT_SCOPE
// (an HTTP transport answers a direct call with 403 and a step-up challenge
// from the same refusal). The store owner's grants are the gate's own, later check.
std::optional<gate::Refusal> scope_refusal(const plugins::Tool& tool, const auth::Principal& principal);

// A tool error: isError with one text block the agent can act on.
Json tool_error(const std::string& text);

} // namespace gatehouse::protocol
