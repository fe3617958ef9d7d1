#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/argument_bounds.hpp"
#include "limits/rate_limiter.hpp"
#include "plugins/tool_registry.hpp"
#include "session/session_service.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/request.hpp"
#include "protocol/request_decoder.hpp"
#include "protocol/tool_disclosure.hpp"

#include <functional>

namespace gatehouse::protocol {

// Where a call of a task-capable tool goes instead of its plugin
// (tasks::TaskCalls): the gate and the input validation have passed.
class TaskStarter {
public:
    // What starting asks for: the call as the gate saw it.
    struct Start {
        const plugins::Tool& tool;
        const Json& arguments;      // validated, without the session handle
        const Json& sent_arguments; // as the client sent them
        const gate::GateFindings& findings;
        std::string input_responses = "{}"; // the first round's, for a task started by its tool
        std::string state = {};
    };

    virtual ~TaskStarter() = default;
    // Whether this call runs as a task: a task-capable tool, and a client
    // that declared the extension (or a tool that requires one). Throws
    // ProtocolError -32021 for a 2026-07-28 client without the extension
    // calling a tool that requires it.
    virtual bool runs_as_task(const Request& request, const plugins::Tool& tool) const = 0;
    // Whether the tool's first rounds run as a plain call (GH_TOOL_ASKS_BEFORE_TASK).
    virtual bool asks_first(const Request& request, const plugins::Tool& tool) const = 0;
    // Creates the task durably, starts its first round and answers the
    // CreateTaskResult (or the job handle).
    virtual Json start(Request& request, Start start) = 0;
    // Answers job_status, job_result and job_cancel (ToolDisclosure::is_job_tool).
    virtual Json answer_job(const plugins::Tool& tool, const Json& arguments, Request& request) = 0;
};

// What one round of a task's plugin answered, as the task records it.
struct TaskRound {
    enum class Kind { result, input_required, failed };
    Kind kind = Kind::result;
    Json body; // the CallToolResult; {"inputRequests", "requestState"?}; the JSON-RPC error {code, message, data?}
    bool cancelled = false; // the plugin stopped on is_cancelled (GH_STATUS_CANCELLED)
    // The round never reached its plugin, for a reason that passes: the state
    // backend did not answer the gate (STATE_UNAVAILABLE), or the family was
    // at its in-flight cap (PLUGIN_BUSY). `body` is that refusal; the round
    // may be run again with the same input.
    bool held_back = false;
};

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
        TaskStarter* tasks = nullptr;                // where task-capable calls go; null: none is a task
    };

    ToolCall(Parts parts, limits::ArgumentBounds bounds) : parts_(parts), bounds_(bounds) {}

    // request.call is the decoded target; the tool is never looked up again.
    Json run(Request& request) const;

    // One round of a task: the gate again (a task never outlives its
    // caller's authorisation), then the plugin with this round's input.
    // `request` is the task's own (its principal, capabilities, progress and
    // cancellation); `arguments` as the client sent them. `about_to_run`,
    // when set, runs once the round has passed the gate and has its place in
    // the family, just before the plugin is called.
    TaskRound run_task_round(Request& request, const plugins::Tool& tool, const Json& sent_arguments,
                             std::string_view input_responses, std::string_view state,
                             const std::function<void()>& about_to_run = {}) const;

    void set_tasks(TaskStarter* tasks) { parts_.tasks = tasks; }

    // The gate's refusal of `principal` calling `tool` with these arguments
    // now, as a tool result; nothing when it would pass.
    std::optional<Json> gate_refusal(const plugins::Tool& tool, const auth::Principal& principal,
                                     const Json& sent_arguments) const;

private:
    Json run_meta_tool(const plugins::Tool& tool, const Json& arguments, Request& request) const;

    // `may_start_task`: the call runs as a task (TaskStarter::runs_as_task),
    // which a tool asking before its task starts from its plain rounds.
    Json invoke(const plugins::Tool& tool, const Json& arguments, Request& request, const gate::GateFindings& findings,
                const Json& sent_arguments, bool may_start_task) const;
    // The plugin's rounds of a call (InputRounds), and its answer as the
    // client gets it. `task_arguments`: the call may start its task (its
    // validated arguments, for the task); `first_answer`: the first round's
    // answer, which its family gave later (begin_later).
    Json run_rounds(const plugins::Tool& tool, const std::string& argument_text, Request& request,
                    const gate::GateFindings& findings, const Json& sent_arguments, const Json* task_arguments,
                    std::optional<PluginAnswer> first_answer = std::nullopt) const;
    // The same call in a family that answers later: sets request.deferred
    // and returns nothing; the answer passes the same checks when it comes.
    Json begin_later(const plugins::Tool& tool, const Json& arguments, Request& request,
                     const gate::GateFindings& findings, const Json& sent_arguments) const;
    // The plugin's final answer as the client gets it: status, shape and
    // outputSchema checked. With `as_written`, for an answer McpServer::finish
    // completes, a result it would pass on unchanged is returned as the
    // plugin's text (protocol::written_json), not written again from its tree.
    Json result_of(const plugins::Tool& tool, const Request& request, PluginAnswer answer,
                   bool as_written = false) const;

    Parts parts_;
    limits::ArgumentBounds bounds_;
};

// The token layer of scopes, decided here for every route to a tool: a
// verified access token without the tool's scope gets INSUFFICIENT_SCOPE
// (an HTTP transport answers a direct call with 403 and a step-up challenge
// from the same refusal). The store owner's grants are the gate's own, later check.
std::optional<gate::Refusal> scope_refusal(const plugins::Tool& tool, const auth::Principal& principal);

// A tool error: isError with one text block the agent can act on.
Json tool_error(const std::string& text);

} // namespace gatehouse::protocol
