#include "protocol/tool_call.hpp"

#include "limits/argument_bounds.hpp"
#include "protocol/deferred_answer.hpp"
#include "protocol/json_writer.hpp"
#include "mrtr/input_requests.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/loaded_plugin.hpp"
#include "protocol/request_environment.hpp"
#include "protocol/result_shape.hpp"
#include "session/call_sessions.hpp"
#include "session/session_service.hpp"

#include <spdlog/spdlog.h>

#include <sstream>
#include <string_view>

namespace gatehouse::protocol {

// Keys looked up by length, not measured with strlen at every member compared.
using namespace std::string_view_literals;

Json tool_error(const std::string& text) {
    return {{"content", Json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

namespace {

// A plugin's result text as an answer may carry it as it is: one object on
// one line (a line break between its tokens would end a stdio message
// early), without the white space around it (a line's own end, as printf
// and print leave it); empty when it is not. Its strings were read as UTF-8
// and its escapes checked when it was parsed.
std::string_view one_line_object(std::string_view text) {
    constexpr std::string_view kSpace = " \t\r\n";
    const std::size_t first = text.find_first_not_of(kSpace);
    if (first == std::string_view::npos || text[first] != '{') return {};
    text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
    if (text.back() != '}' || text.find_first_of("\r\n") != std::string_view::npos) return {};
    return text;
}

// Whether the answer carries a result unchanged but for what finish puts
// first: no error flag (its outcome is read from the tree), no resultType
// to drop, no _meta to merge the server's identity into, its content there.
bool passes_unchanged(const Json& result) {
    bool content = false;
    for (const auto& [name, value] : result.get_ref<const Json::object_t&>()) {
        if (name == "isError"sv || name == "resultType"sv || name == "_meta"sv) return false;
        content = content || name == "content"sv;
    }
    return content;
}

// What the plugin reaches of this request through the host function table:
// the request's own (RequestEnvironment), and its session services.
class ToolCallEnvironment final : public RequestEnvironment {
public:
    ToolCallEnvironment(Request& request, const plugins::Tool& tool, session::SessionService* sessions,
                        const session::Session* session)
        : RequestEnvironment(request, tool.family, Json()), tool_(tool),
          sessions_(sessions, request.principal, tool.family, session, tool.plugin && tool.plugin->store_credentials()),
          session_(session) {}

    plugins::ServiceAnswer describe_session(std::string_view handle) override { return sessions_.describe(handle); }
    plugins::ServiceAnswer open_session(std::string_view topic) override { return sessions_.open(topic); }
    plugins::ServiceAnswer accept_rules(std::string_view handle, std::string_view code) override {
        return sessions_.accept_rules(handle, code);
    }
    plugins::ServiceAnswer record_critical_read(std::string_view item_ids) override {
        return sessions_.critical_read(item_ids);
    }
    plugins::ServiceAnswer store_credentials() override { return sessions_.store_credentials(); }
    bool masks_passwords() const override { return sessions_.masks_passwords(); }
    std::string masked(std::string_view text) override { return sessions_.masked(text); }

    // Runs one round of the tool in its family with this environment, and
    // hands back the family's answer: its text, or the JSON a family in the
    // host handed over (gh_sink::value).
    PluginAnswer run_round(std::string_view arguments, std::string_view input_responses, std::string_view state) {
        gh_call call{this, tool_.family, {}, input_responses, state, request_.host};
        gh_sink out;
        const int32_t status = tool_.plugin->call(tool_.call, tool_.tool_data, &call, arguments, &out);
        return {status, std::move(out.bytes), std::move(out.value)};
    }

    // The same round begun in a family that answers later
    // (LoadedPlugin::answers_later): its answer reaches `answered` on the
    // thread that hears it. This environment lives until then.
    void begin_round(std::string arguments, InputRounds::Round round, DeferredAnswer::Answered answered,
                     DeferredAnswer::Elsewhere elsewhere) {
        round_ = std::move(round);
        call_.emplace(gh_call{this, tool_.family, {}, round_.responses, round_.state, request_.host});
        tool_.plugin->begin_call(
            tool_.tool_data, &*call_, std::move(arguments),
            [answered = std::move(answered)](int32_t status, std::string bytes) {
                answered({status, std::move(bytes), std::nullopt});
            },
            std::move(elsewhere));
    }

    // Whether the answer holds the store password (screened only where the
    // operator allowed the family it); one handed over as JSON is screened as
    // its text.
    bool holds_password(const PluginAnswer& answer) {
        if (!answer.value) return sessions_.holds_password(answer.text);
        return sessions_.masks_passwords() && sessions_.holds_password(encode(*answer.value));
    }

    // The call's context says so (ABI 1.7): "taskStart" while answering
    // {"startTask": true} would start its task; "task" inside one.
    void set_task_start(bool may_start) { task_start_ = may_start; }
    void set_task(std::string id) { task_id_ = std::move(id); }

private:
    void describe(Json& context) const override {
        context["tool"] = tool_.name;
        context["family"] = tool_.family;
        if (task_start_) context["taskStart"] = true;
        // ABI 1.8: the W3C trace context a family passes on to what it calls.
        if (!request_.trace.empty()) {
            context["trace"] = {{"traceparent", request_.trace.traceparent()}};
            if (!request_.trace.tracestate.empty()) context["trace"]["tracestate"] = request_.trace.tracestate;
        }
        if (!task_id_.empty()) context["task"] = {{"taskId", task_id_}};
        if (session_) context["session"] = session_->context_view();
        if (request_.host && !request_.host->pages_origin.empty())
            context["pages_url"] = request_.host->pages_origin + "/pages/" + tool_.family;
    }

    const plugins::Tool& tool_;
    session::CallSessions sessions_;
    const session::Session* session_; // null: the tool is not gated by a session
    bool task_start_ = false;
    std::string task_id_;
    InputRounds::Round round_;    // begin_round's: the call reads it until answered
    std::optional<gh_call> call_; // begin_round's
};

std::string status_name(int32_t status) {
    switch (status) {
    case GH_STATUS_INTERNAL: return "internal";
    case GH_STATUS_CANCELLED: return "cancelled";
    default: return "status " + std::to_string(status);
    }
}

gate::Refusal rate_limited(const limits::RateLimiter::Refused& r) {
    std::ostringstream rate;
    rate << r.calls_per_second << " calls per second, bursts of " << r.burst;
    gate::Refusal refusal;
    refusal.code = gate::refusal_code::rate_limited;
    refusal.message = "You are calling " + std::string(r.limit == "rate_limits" ? "tools" : "this tool") +
                      " faster than this server allows (" + r.limit + ": " + rate.str() + "); nothing ran. Retry in " +
                      std::to_string(r.retry_after_ms) + " ms.";
    refusal.next = {{"limit", r.limit}};
    refusal.retry_after_ms = r.retry_after_ms;
    return refusal;
}

// The buckets could not be read (a shared Redis down): refused as the gate
// refuses when its state is out of reach, never let through.
gate::Refusal rate_state_unavailable() {
    gate::Refusal refusal;
    refusal.code = gate::refusal_code::state_unavailable;
    refusal.message = "The host cannot reach the state its rate limits are counted in right now, so the call was not "
                      "run; try again shortly.";
    refusal.next = {{"action", "retry"}};
    return refusal;
}

gate::Refusal rate_refusal(const limits::RateLimiter::Refused& r) {
    return r.cause == limits::RateLimiter::Refused::Cause::state_unavailable ? rate_state_unavailable()
                                                                             : rate_limited(r);
}

gate::Refusal plugin_busy(const plugins::Tool& tool) {
    const auto& limits = tool.plugin->call_limits();
    const std::string key = limits.max_in_flight_overridden
                                ? std::string("max_in_flight of its ") + tool.plugin->entry_section() + " entry"
                                : std::string("limits.max_in_flight_per_plugin");
    gate::Refusal refusal;
    refusal.code = gate::refusal_code::plugin_busy;
    refusal.message = "Tool '" + tool.name + "' was not run: its family '" + tool.family + "' already has " +
                      std::to_string(limits.max_in_flight) + " calls in progress, its limit (" + key +
                      "); some may be calls that timed out and have not returned yet. Retry later, or use a tool of "
                      "another family.";
    refusal.next = {{"family", tool.family}, {"maxInFlight", limits.max_in_flight}};
    return refusal;
}

gate::Refusal password_withheld(const plugins::Tool& tool) {
    spdlog::warn("tool '{}' ({}) answered with the store password; its answer was withheld", tool.name, tool.family);
    gate::Refusal refusal;
    refusal.code = gate::refusal_code::secret_in_result;
    refusal.message = "Tool '" + tool.name + "' answered with the store's password, so the host withheld its answer. " +
                      "This is a fault in the family '" + tool.family + "', not in your call; tell the person.";
    refusal.next = {{"family", tool.family}, {"action", "tell the person"}};
    return refusal;
}

} // namespace

std::optional<gate::Refusal> scope_refusal(const plugins::Tool& tool, const auth::Principal& principal) {
    // Only a verified token carries scopes; stdio and HTTP without auth have none to check.
    if (principal.kind != "token" || tool.scope.empty() || principal.has_scope(tool.scope)) return std::nullopt;
    gate::Refusal refusal;
    refusal.code = gate::refusal_code::insufficient_scope;
    refusal.message = "The tool '" + tool.name + "' needs the scope '" + tool.scope +
                      "', which this access token does not carry; obtain a token with it and retry. Nothing ran.";
    refusal.next = {{"scope", tool.scope}, {"tool", tool.name}};
    return refusal;
}

Json ToolCall::run(Request& request) const {
    if (!request.call)
        throw ProtocolError(error_code::invalid_params, "tools/call needs params.name, the tool's name as a string");
    const ToolTarget& target = *request.call;
    const plugins::Tool* tool = target.tool;
    // Every route to a tool (a direct call, call_tool) passes here, before
    // anything is spent on the call.
    if (target.scope_refusal) return target.scope_refusal->to_tool_result();
    const Json* arguments = &target.arguments;
    // Before anything is spent: a 2026-07-28 client that cannot take a task
    // for a tool that needs one is told which capability it lacks (-32021).
    const bool as_task = tool->plugin && parts_.tasks && parts_.tasks->runs_as_task(request, *tool);

    // call_tool spends nothing itself: the call it forwards is counted.
    if (tool->name != ToolDisclosure::kCallTool || tool->plugin)
        if (auto refused = parts_.rate_limiter.acquire(request.principal.owner_key(), tool->name,
                                                       limits::RateLimiter::Clock::now())) {
            if (request.findings && refused->cause == limits::RateLimiter::Refused::Cause::over_rate)
                request.findings->found_rate_limit(refused->limit);
            return rate_refusal(*refused).to_tool_result();
        }
    if (auto refusal = limits::argument_beyond_bounds(*arguments, bounds_, tool->name))
        return refusal->to_tool_result();

    // A requestState binds the arguments as the client sent them, session handle included.
    const Json& sent_arguments = *arguments;
    gate::GateFindings findings;
    auto refusal = parts_.gate.check({*tool, request.principal, *arguments, &findings});
    if (findings.session && request.findings)
        request.findings->found_session(findings.session->store, findings.session->user);
    if (refusal) return refusal->to_tool_result();
    Json without_session; // the handle is the host's business: the plugin sees the session in its context
    if (findings.session) {
        without_session = *arguments;
        without_session.erase("session");
        arguments = &without_session;
    }

    if (auto violation = tool->input_schema->validate(*arguments))
        return tool_error("Invalid arguments for tool '" + tool->name + "' " + violation->sentence() +
                          ". Fix that value and call the tool again.");

    if (!tool->plugin) return run_meta_tool(*tool, *arguments, request);
    if (as_task && !parts_.tasks->asks_first(request, *tool))
        return parts_.tasks->start(request, {*tool, *arguments, sent_arguments, findings});
    return invoke(*tool, *arguments, request, findings, sent_arguments, as_task);
}

Json ToolCall::run_meta_tool(const plugins::Tool& tool, const Json& arguments, Request& request) const {
    if (ToolDisclosure::is_job_tool(tool.name) && parts_.tasks)
        return parts_.tasks->answer_job(tool, arguments, request);
    if (tool.name != ToolDisclosure::kCallTool) return parts_.disclosure.answer(tool, arguments, request.principal);
    // Within call_tool an unknown name is a mistake in its arguments, which
    // the model can correct: a tool error, not a protocol error. Decoding
    // already resolved the name (ToolTarget::forwarded).
    const plugins::Tool* forwarded = request.call->forwarded;
    if (!forwarded)
        return tool_error("call_tool: Unknown tool: '" + echoed_name(arguments.at("name").get<std::string>()) +
                          "'; tools/list names the tools");
    // The forwarded call takes the whole tools/call path again — scope, rate
    // limit, bounds, gate, validation, plugin, input rounds, output check —
    // so nothing reached through call_tool is treated differently from a
    // direct call. A retry's inputResponses and requestState stand beside
    // call_tool's name and arguments in params, and belong to the forwarded call.
    std::optional<ToolTarget> target = parts_.decoder.target_of(
        request.call->registry, *forwarded, arguments.contains("arguments") ? arguments["arguments"] : Json::object(),
        request.principal);
    // The forwarded target lives on this stack: its call is answered before
    // this returns, never later.
    std::swap(request.call, target);
    struct Restore {
        Request& request;
        std::optional<ToolTarget>& original;
        bool may_answer_later;
        ~Restore() {
            std::swap(request.call, original);
            request.may_answer_later = may_answer_later;
        }
    } restore{request, target, std::exchange(request.may_answer_later, false)};
    return run(request);
}

Json ToolCall::invoke(const plugins::Tool& tool, const Json& arguments, Request& request,
                      const gate::GateFindings& findings, const Json& sent_arguments, bool may_start_task) const {
    if (!tool.plugin->try_enter()) return plugin_busy(tool).to_tool_result();
    if (request.may_answer_later && !may_start_task && tool.plugin->answers_later())
        return begin_later(tool, arguments, request, findings, sent_arguments);
    struct Leave {
        plugins::LoadedPlugin* plugin;
        ~Leave() { plugin->leave(); }
    } leave{tool.plugin};
    return run_rounds(tool, encode(arguments), request, findings, sent_arguments,
                      may_start_task ? &arguments : nullptr);
}

Json ToolCall::run_rounds(const plugins::Tool& tool, const std::string& argument_text, Request& request,
                          const gate::GateFindings& findings, const Json& sent_arguments, const Json* task_arguments,
                          std::optional<PluginAnswer> first_answer) const {
    const bool may_start_task = task_arguments != nullptr;
    // Every round's answer (a final one, or input requests a client would
    // see) of a family allowed the store password is checked before use.
    bool withheld = false;
    std::optional<std::pair<std::string, std::string>> task_input;
    // A 2025-11-25 client's later rounds run here, after the person answered,
    // maybe minutes after the gate decided: each decides again on what holds
    // now (the store switched, the session replaced, the license removed),
    // as a 2026-07-28 retry and a task round do.
    gate::GateFindings round_findings = findings;
    bool first_round = true;
    std::optional<Json> refused_later;
    auto outcome = parts_.input_rounds.run(
        request, {tool.name, sent_arguments}, tool.family, "tool '" + tool.name + "'",
        [&](std::string_view responses, std::string_view state) {
            if (!first_round) {
                round_findings = {};
                if (auto refusal = parts_.gate.check({tool, request.principal, sent_arguments, &round_findings})) {
                    refused_later = refusal->to_tool_result();
                    return PluginAnswer{GH_STATUS_OK, {}, {}};
                }
            }
            first_round = false;
            ToolCallEnvironment environment(request, tool, parts_.sessions, round_findings.session.get());
            // A tool that asks before its task (GH_TOOL_ASKS_BEFORE_TASK) ends
            // its plain rounds with {"startTask": true}: the round's input goes
            // on to the task.
            environment.set_task_start(may_start_task);
            // A round its family answered later comes in as it is.
            PluginAnswer answer = first_answer ? std::move(*std::exchange(first_answer, std::nullopt))
                                               : environment.run_round(argument_text, responses, state);
            if (environment.holds_password(answer)) {
                withheld = true;
                answer = {GH_STATUS_TOOL_ERROR, {}, {}};
            }
            if (may_start_task && answer.status == GH_STATUS_INPUT_REQUIRED)
                if (auto state_kept = mrtr::start_task_answer(answer.text)) {
                    task_input.emplace(std::string(responses), std::move(*state_kept));
                    answer = {GH_STATUS_OK, {}, {}};
                }
            return answer;
        },
        tool.plugin);
    if (refused_later) return std::move(*refused_later);
    if (withheld) return password_withheld(tool).to_tool_result();
    if (task_input)
        return parts_.tasks->start(request, {tool, *task_arguments, sent_arguments, findings,
                                             std::move(task_input->first), std::move(task_input->second)});
    if (outcome.input_required.is_object()) return std::move(outcome.input_required);
    return result_of(tool, request, std::move(outcome.answer), true);
}

Json ToolCall::begin_later(const plugins::Tool& tool, const Json& arguments, Request& request,
                           const gate::GateFindings& findings, const Json& sent_arguments) const {
    // The place try_enter took is held until the answer has been seen to.
    std::shared_ptr<plugins::LoadedPlugin> inside(tool.plugin, [](plugins::LoadedPlugin* plugin) { plugin->leave(); });
    // A 2026-07-28 request is one round: its input is read now (a malformed
    // one is refused before anything is sent), its answer made an outcome
    // when it comes. The subject's arguments are the request's own, which
    // lives until then (Request::may_answer_later).
    const InputRounds::Subject subject{tool.name, sent_arguments};
    const bool modern = request.revision == Revision::modern_2026_07_28;
    InputRounds::Round round = modern ? parts_.input_rounds.open_round(request, subject) : InputRounds::Round{};
    auto environment = std::make_shared<ToolCallEnvironment>(request, tool, parts_.sessions, findings.session.get());
    std::string text = encode(arguments);
    // A 2025-11-25 call's later rounds send the arguments again.
    std::string later_text = modern ? std::string() : text;
    auto deferred = std::make_shared<DeferredAnswer>(
        [environment, session = findings.session, text = std::move(text),
         round = std::move(round)](DeferredAnswer::Answered answered, DeferredAnswer::Elsewhere elsewhere) mutable {
            environment->begin_round(std::move(text), std::move(round), std::move(answered), std::move(elsewhere));
        },
        [this, &tool, &request, subject, modern, environment, inside, findings,
         text = std::move(later_text)](PluginAnswer answer) mutable -> Json {
            // The plugin's place is free once this is done, before the answer is sent.
            const auto leave = std::move(inside);
            // A 2025-11-25 call's later rounds, if its plugin asks for input,
            // run as a waiting call's do (on a worker: run_elsewhere_when).
            // Screened first by the environment the round ran in, which
            // knows the password it handed out (store_credentials).
            if (environment->holds_password(answer)) return password_withheld(tool).to_tool_result();
            if (!modern)
                return run_rounds(tool, text, request, findings, subject.arguments, nullptr, std::move(answer));
            InputRounds::Outcome outcome = parts_.input_rounds.close_round(
                request, subject, tool.family, "tool '" + tool.name + "'", std::move(answer));
            if (outcome.input_required.is_object()) return std::move(outcome.input_required);
            return result_of(tool, request, std::move(outcome.answer), true);
        });
    // Asking the client waits for the person: never on the thread that hears the family.
    if (!modern)
        deferred->run_elsewhere_when(
            [](const PluginAnswer& answer) { return answer.status == GH_STATUS_INPUT_REQUIRED; });
    request.deferred = std::move(deferred);
    return {};
}

std::optional<Json> ToolCall::gate_refusal(const plugins::Tool& tool, const auth::Principal& principal,
                                           const Json& sent_arguments) const {
    gate::GateFindings findings;
    if (auto refusal = parts_.gate.check({tool, principal, sent_arguments, &findings}))
        return refusal->to_tool_result();
    return std::nullopt;
}

TaskRound ToolCall::run_task_round(Request& request, const plugins::Tool& tool, const Json& sent_arguments,
                                   std::string_view input_responses, std::string_view state,
                                   const std::function<void()>& about_to_run) const {
    using Kind = TaskRound::Kind;
    try {
        gate::GateFindings findings;
        auto refusal = parts_.gate.check({tool, request.principal, sent_arguments, &findings});
        if (findings.session && request.findings)
            request.findings->found_session(findings.session->store, findings.session->user);
        if (refusal) {
            TaskRound refused{Kind::result, refusal->to_tool_result()};
            refused.held_back = refusal->code == gate::refusal_code::state_unavailable;
            return refused;
        }
        Json arguments = sent_arguments;
        if (findings.session) arguments.erase("session");
        if (!tool.plugin->try_enter()) {
            TaskRound busy{Kind::result, plugin_busy(tool).to_tool_result()};
            busy.held_back = true;
            return busy;
        }
        struct Leave {
            plugins::LoadedPlugin* plugin;
            ~Leave() { plugin->leave(); }
        } leave{tool.plugin};
        ToolCallEnvironment environment(request, tool, parts_.sessions, findings.session.get());
        environment.set_task(request.task_id);
        if (about_to_run) about_to_run();
        PluginAnswer answer = environment.run_round(encode(arguments), input_responses, state);
        const int32_t status = answer.status;
        if (environment.holds_password(answer)) return {Kind::result, password_withheld(tool).to_tool_result()};
        if (status == GH_STATUS_INPUT_REQUIRED) {
            const std::string what = "tool '" + tool.name + "'";
            mrtr::InputRequired asked = checked_input_required(request, answer, tool.family, what);
            if (asked.requests.empty()) plugin_fault(tool.family, what, "asked for no input inside its task");
            Json body = {{"inputRequests", std::move(asked.requests)}};
            if (!asked.state.empty()) body["requestState"] = std::move(asked.state);
            return {Kind::input_required, std::move(body)};
        }
        // A fault inside the plugin is an internal error of the request,
        // which a task reports as failed (a plain call shows the model a tool error).
        if (status == GH_STATUS_INTERNAL) {
            spdlog::error("tool '{}' ({}) in task {}: internal: {}", tool.name, tool.family, request.task_id,
                          answer.text);
            return {Kind::failed,
                    {{"code", error_code::internal_error},
                     {"message", "Tool '" + tool.name + "' failed inside its plugin; the host logged the details."}}};
        }
        TaskRound round{Kind::result, result_of(tool, request, std::move(answer))};
        round.cancelled = status == GH_STATUS_CANCELLED;
        return round;
    } catch (const ProtocolError& e) {
        Json error = {{"code", e.code()}, {"message", e.what()}};
        if (!e.data().is_null()) error["data"] = e.data();
        return {Kind::failed, std::move(error)};
    } catch (const std::exception& e) {
        // Anything else the round met (a result that is no JSON the checks
        // can read, memory): the task fails now, saying so, rather than
        // staying "working" until its lease lapses and being reported as
        // stopped by a host that never stopped.
        spdlog::error("tool '{}' ({}) in task {}: the round failed: {}", tool.name, tool.family, request.task_id,
                      e.what());
        return {Kind::failed,
                {{"code", error_code::internal_error},
                 {"message",
                  "Tool '" + tool.name + "' failed in the host while its task ran; the host logged the details."}}};
    }
}

Json ToolCall::result_of(const plugins::Tool& tool, const Request& request, PluginAnswer answer,
                         bool as_written) const {
    switch (answer.status) {
    case GH_STATUS_OK: break;
    case GH_STATUS_TOOL_ERROR:
    case GH_STATUS_INVALID_ARGS:
        return tool_error(answer.text.empty() ? "Tool '" + tool.name + "' failed without saying why." : answer.text);
    case GH_STATUS_CANCELLED: return tool_error("Tool '" + tool.name + "' stopped: the call was cancelled.");
    case GH_STATUS_REFUSED:
        if (auto refusal = gate::family_refusal(answer.text)) return refusal->to_tool_result();
        spdlog::error("tool '{}' ({}) refused with an answer that is not {{code, message, next}} (code "
                      "UPPER_SNAKE, a message, next an object): {}",
                      tool.name, tool.family, answer.text);
        return tool_error("Tool '" + tool.name +
                          "' refused with a malformed answer; the host logged the details. This is a fault in the "
                          "tool, not in your call.");
    default:
        spdlog::error("tool '{}' ({}): {}: {}", tool.name, tool.family, status_name(answer.status), answer.text);
        return tool_error("Tool '" + tool.name +
                          "' failed inside its plugin; the host logged the details. Try again later, or tell the "
                          "operator if it keeps failing.");
    }

    Json result;
    std::string_view as_sent; // the plugin's text, when the answer may carry it as it is
    if (answer.value) {
        result = std::move(*answer.value);
    } else {
        BoundedParse parsed = parse_bounded(answer.text);
        if (!parsed.parsed()) {
            spdlog::error("tool '{}' ({}) returned malformed JSON: {}", tool.name, tool.family, parsed.error);
            return tool_error("Tool '" + tool.name +
                              "' returned a malformed result (not JSON); the host logged the details. This is a "
                              "fault in the tool, not in your call.");
        }
        result = std::move(parsed.value);
        // A text that says more than its tree (a name given twice, a
        // number rounded), which is what the checks below read, is not
        // passed on: the tree is.
        if (as_written && !parsed.names_repeated && !parsed.numbers_rounded) as_sent = one_line_object(answer.text);
    }
    if (!result.is_object()) {
        spdlog::error("tool '{}' ({}) returned a result that is not a CallToolResult object", tool.name, tool.family);
        return tool_error("Tool '" + tool.name +
                          "' returned a malformed result; the host logged the details. This is a fault in the "
                          "tool, not in your call.");
    }
    if (auto problem = tool_result_problem(result, request.revision)) {
        spdlog::error("tool '{}' ({}) returned a result that breaks the protocol's schema {}", tool.name, tool.family,
                      *problem);
        return tool_error("Tool '" + tool.name + "' returned a result that breaks the protocol's schema (" + *problem +
                          "), so the host did not pass it on. This is a fault in the tool, not in your call.");
    }
    if (!as_sent.empty() && !passes_unchanged(result)) as_sent = {};
    // Errors travel by status. A plugin that flags its answer an error
    // anyway keeps the flag: dropping it would make the error read as a success.
    const bool flagged_error = result.value("isError"sv, false);
    if (!flagged_error) result.erase("isError"sv);
    result.erase("resultType"sv);
    auto structured = result.find("structuredContent"sv);
    if (tool.output_schema && !(flagged_error && structured == result.end())) {
        if (structured == result.end()) {
            spdlog::error("tool '{}' ({}) declares an outputSchema but returned no structuredContent", tool.name,
                          tool.family);
            return tool_error("Tool '" + tool.name +
                              "' returned no structured result although it declares an outputSchema. This is a "
                              "fault in the tool, not in your call.");
        }
        if (auto violation = tool.output_schema->validate(*structured)) {
            spdlog::error("tool '{}' ({}) broke its outputSchema {}", tool.name, tool.family, violation->sentence());
            return tool_error("Tool '" + tool.name + "' returned a result that breaks its own outputSchema (" +
                              violation->sentence() + "). This is a fault in the tool, not in your call.");
        }
    }
    if (!as_sent.empty()) return written_json(as_sent);
    if (!result.contains("content"sv)) {
        result["content"] = Json::array();
        if (structured != result.end()) result["content"].push_back({{"type", "text"}, {"text", structured->dump()}});
    }
    return result;
}

} // namespace gatehouse::protocol
