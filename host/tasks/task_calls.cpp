#include "tasks/task_calls.hpp"

#include "metrics/log_context.hpp"
#include "protocol/call_outcome.hpp"

#include "gate/refusal.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/tool_disclosure.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cstdio>

namespace gatehouse::tasks {

using protocol::ProtocolError;
using protocol::Request;
using protocol::error_code::invalid_params;
using protocol::error_code::missing_required_client_capability;

namespace {

// How often a round's progress is written to its record, at most: a plugin
// may report thousands of steps.
constexpr std::int64_t kProgressWriteMs = 250;

Json required_extension() {
    return {{"extensions", {{kExtension, Json::object()}}}};
}

[[noreturn]] void missing_extension(const std::string& what) {
    throw ProtocolError(missing_required_client_capability,
                        "Missing required client capability: " + what + " needs the " + std::string(kExtension) +
                            " extension, which this request did not declare in its client capabilities.",
                        {{"requiredCapabilities", required_extension()}});
}

// A refusal of the tasks' own, as the tool result a gate refusal is.
Json refused(std::string_view code, std::string message, Json next = Json::object()) {
    gate::Refusal refusal;
    refusal.code = std::string(code);
    refusal.message = std::move(message);
    refusal.next = std::move(next);
    return refusal.to_tool_result();
}

Json too_many_tasks(std::uint32_t limit) {
    return refused(gate::refusal_code::too_many_tasks,
                   "You already have " + std::to_string(limit) +
                       " unfinished tasks on this server, its limit (tasks.max_per_principal); wait for one to "
                       "finish or cancel one, then call again. Nothing ran.",
                   {{"maxTasks", limit}});
}

Json tasks_unavailable() {
    return refused(gate::refusal_code::state_unavailable,
                   "The host cannot reach the state its tasks are kept in right now, so nothing was done; try again "
                   "shortly.",
                   {{"action", "retry"}});
}

// What a round's notifications become: progress is the task's status
// message (written at most every kProgressWriteMs); log messages are not
// sent for tasks, as the extension says.
class TaskOutbound final : public protocol::Outbound {
public:
    TaskOutbound(TaskStore& store, std::string id) : store_(store), id_(std::move(id)) {}

    void send(const Json& message) override {
        // Only progress is kept; an answer may be text written already (protocol::written_json).
        if (!message.is_object() || protocol::text_member(message, "method") != "notifications/progress") return;
        const Json& p = message["params"];
        std::string text;
        if (p.contains("message") && p["message"].is_string()) text = p["message"].get<std::string>();
        char amount[64];
        if (p.contains("total") && p["total"].is_number())
            std::snprintf(amount, sizeof amount, "%g of %g", p.value("progress", 0.0), p["total"].get<double>());
        else
            std::snprintf(amount, sizeof amount, "%g", p.value("progress", 0.0));
        text = text.empty() ? std::string("Progress: ") + amount : text + " (" + amount + ")";
        const std::int64_t now = now_ms();
        if (now - last_write_ms_ < kProgressWriteMs) return;
        last_write_ms_ = now;
        try {
            store_.update(id_, [&](TaskRecord& r) {
                if (r.status != Status::working) return false;
                r.status_message = text.substr(0, 1000);
                return true;
            });
        } catch (const state::BackendError& e) {
            spdlog::warn("task {}: its progress could not be written: {}", id_, e.what());
        }
    }

private:
    TaskStore& store_;
    const std::string id_;
    std::atomic<std::int64_t> last_write_ms_{0}; // a plugin may report from several threads
};

// What a client without the extension gets for a tool that runs only as a
// task: an ordinary tool result naming the job, and how to follow it.
Json job_handle(const TaskRecord& record, const plugins::Tool& tool) {
    const std::string text = "Tool '" + tool.name + "' runs as a job, which takes a while; its id is " + record.id +
                             ". Ask how it is doing with job_status and for its result with job_result (arguments "
                             "{\"job\": \"" +
                             record.id + "\"}), at most every " + std::to_string(record.poll_ms) +
                             " ms; stop it with job_cancel.";
    Json result = {{"content", Json::array({{{"type", "text"}, {"text", text}}})}};
    // The tool's own outputSchema, which describes its result and not the
    // handle, is not listed to these clients (McpServer::list_tools).
    result["structuredContent"] = {{"job",
                                    {{"id", record.id},
                                     {"status", status_name(record.status)},
                                     {"pollIntervalMs", record.poll_ms},
                                     {"ttlMs", record.ttl_ms}}}};
    return result;
}

protocol::Revision revision_named(const std::string& name) {
    return name == protocol::revision_name(protocol::Revision::legacy_2025_11_25)
               ? protocol::Revision::legacy_2025_11_25
               : protocol::Revision::modern_2026_07_28;
}

} // namespace

TaskCalls::TaskCalls(const plugins::LiveRegistry& registry, protocol::ToolCall& tool_call, TaskStore& store,
                     TaskRunner& runner, std::shared_ptr<limits::BucketStore> poll_buckets,
                     const plugins::HostServices* host, metrics::Observability* observability)
    : registry_(registry), tool_call_(tool_call), store_(store), runner_(runner),
      poll_buckets_(std::move(poll_buckets)), host_(host), observability_(observability) {
    const auto& s = store_.settings();
    poll_pace_.calls_per_second = 1000.0 / static_cast<double>(s.poll_interval_ms);
    poll_pace_.burst = s.poll_burst;
}

bool TaskCalls::declared(const Request& request) {
    const auto ext = request.client_capabilities.find("extensions");
    return ext != request.client_capabilities.end() && ext->is_object() && ext->contains(kExtension);
}

bool TaskCalls::runs_as_task(const Request& request, const plugins::Tool& tool) const {
    if (!store_.settings().enabled || tool.task_support == plugins::TaskSupport::none) return false;
    // A 2025-11-25 client has no way to declare the extension: a tool that
    // runs only as a task answers it with a job handle; any other stays a plain call.
    if (request.revision != protocol::Revision::modern_2026_07_28)
        return tool.task_support == plugins::TaskSupport::required;
    if (declared(request)) return true;
    if (tool.task_support == plugins::TaskSupport::required)
        missing_extension("tool '" + tool.name + "' runs only as a task, so calling it");
    return false;
}

bool TaskCalls::asks_first(const Request&, const plugins::Tool& tool) const {
    return tool.asks_before_task;
}

bool TaskCalls::offers_jobs(const plugins::ToolRegistry& registry) {
    for (const plugins::Tool* tool : registry.ordered())
        if (tool->task_support == plugins::TaskSupport::required) return true;
    return false;
}

Json TaskCalls::start(Request& request, Start start) {
    const auto& settings = store_.settings();
    TaskRecord record;
    record.id = TaskStore::new_id();
    record.owner = request.principal.owner_key();
    record.tool = start.tool.name;
    record.status = Status::working;
    record.created_ms = record.updated_ms = now_ms();
    record.ttl_ms = settings.ttl_ms;
    record.poll_ms = settings.poll_interval_ms;
    record.arguments = start.sent_arguments;
    record.revision = protocol::revision_name(request.revision);
    record.client_capabilities = request.client_capabilities;
    if (!request.trace.empty()) {
        record.traceparent = request.trace.traceparent();
        record.tracestate = request.trace.tracestate;
    }
    record.answers = Json::parse(start.input_responses, nullptr, false);
    if (!record.answers.is_object()) record.answers = Json::object();
    record.plugin_state = std::move(start.state);
    record.runner = runner_.instance();
    record.lease_until_ms = runner_.lease_until();
    record.status_message = "The task has started.";
    record.job = !declared(request);
    try {
        if (!store_.create(record)) return too_many_tasks(settings.max_per_principal);
    } catch (const state::BackendError& e) {
        spdlog::error("task for tool '{}' not created: {}", start.tool.name, e.what());
        return tasks_unavailable();
    }
    submit_round(record.id, start.tool, request.principal, request.call ? request.call->registry : registry_.current());
    if (record.job) return job_handle(record, start.tool);
    Json created = record.created();
    created["resultType"] = "task";
    return created;
}

void TaskCalls::submit_round(const std::string& id, const plugins::Tool& tool, const auth::Principal& principal,
                             std::shared_ptr<const plugins::ToolRegistry> registry) {
    const bool queued =
        runner_.run(id, principal.owner_key(), [this, id, &tool, principal, registry](RoundControl& control) {
            round(control, id, tool, principal, registry);
        });
    if (queued) return;
    store_.update(id, [](TaskRecord& r) {
        if (terminal(r.status)) return false;
        r.status = Status::failed;
        r.error = {{"code", -32603}, {"message", "The host is stopping, so this task did not run; start it again."}};
        r.status_message = r.error["message"];
        r.runner.clear();
        return true;
    });
}

namespace {

constexpr std::chrono::milliseconds kFirstHoldBackPause{50};
constexpr std::chrono::milliseconds kLongestHoldBackPause{500};
// A family that stays full (its calls stuck past their timeouts) or a
// backend that stays down ends the waiting task with the refusal after this.
constexpr std::chrono::seconds kMostHoldBack{60};

// Waits `pause`; false as soon as the round is told to stop.
bool sleep_unless_stopped(const RoundControl& control, std::chrono::milliseconds pause) {
    constexpr std::chrono::milliseconds kStep{10};
    const auto until = std::chrono::steady_clock::now() + pause;
    for (;;) {
        if (control.why.load() != StopReason::none) return false;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) return true;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(kStep, until - now));
    }
}

// What tasks/get says of a round waiting to run again (TaskRound::held_back).
std::string waiting_message(const protocol::TaskRound& held) {
    const std::string code(protocol::result_verdict(held.body, false).code);
    const std::string why = code == gate::refusal_code::plugin_busy
                                ? "its family is running as many calls as it may at once"
                                : "the state the gate checks cannot be read just now";
    return "The task is waiting to run: " + why + " (" + code + "); it runs when that passes.";
}

} // namespace

void TaskCalls::say(const std::string& id, const std::string& message) {
    try {
        store_.update(id, [&](TaskRecord& r) {
            if (r.status != Status::working || r.runner != runner_.instance()) return false;
            r.status_message = message;
            return true;
        });
    } catch (const state::BackendError&) {
        // Only a message; the round goes on either way.
    }
}

void TaskCalls::round(RoundControl& control, const std::string& id, const plugins::Tool& tool,
                      const auth::Principal& principal, const std::shared_ptr<const plugins::ToolRegistry>& registry) {
    // The round's input leaves the record as the round takes it.
    std::optional<TaskRecord> taken;
    Json answers;
    std::string state;
    bool cancel_first = false;
    try {
        taken = store_.update(id, [&](TaskRecord& r) {
            if (r.status != Status::working || r.runner != runner_.instance()) return false;
            answers = std::exchange(r.answers, Json::object());
            state = std::exchange(r.plugin_state, std::string());
            cancel_first = r.cancel_requested;
            r.status_message = "The task is running.";
            return true;
        });
    } catch (const state::BackendError& e) {
        spdlog::error("task {}: its round could not start: {}", id, e.what());
        return;
    }
    if (!taken || taken->status != Status::working || taken->runner != runner_.instance()) return;

    protocol::TaskRound outcome;
    if (!cancel_first) {
        auto outbound = std::make_shared<TaskOutbound>(store_, id);
        Request request;
        request.method = "tools/call";
        request.revision = revision_named(taken->revision);
        request.client_capabilities = taken->client_capabilities;
        request.principal = principal;
        auto connection = std::make_shared<protocol::Connection>(outbound, principal);
        request.connection = connection.get();
        connection->transport = "task";
        request.host = host_;
        request.reply = outbound;
        request.in_flight = control.in_flight;
        request.progress_token = "task";
        request.task_id = id;
        // Each round is a span of its own under the call that started the task.
        if (observability_)
            request.trace = observability_->trace_ids().start(
                taken->traceparent.empty() ? std::nullopt : metrics::parse_traceparent(taken->traceparent),
                taken->tracestate);
        request.received = std::chrono::steady_clock::now();
        request.received_at = std::chrono::system_clock::now();
        request.findings = std::make_shared<protocol::CallFindings>();
        metrics::LogScope scope(&request.trace);
        {
            std::lock_guard lock(control.refusal_mutex);
            // The registry goes with the check: the lease watcher may run it
            // as the round ends, and the tool is the registry's.
            control.authorised = [&tool_call = tool_call_, tool = &tool, registry, principal,
                                  arguments = taken->arguments] {
                return tool_call.gate_refusal(*tool, principal, arguments);
            };
        }
        const std::string input_responses = answers.dump(-1, ' ', false, Json::error_handler_t::replace);
        outcome = tool_call_.run_task_round(request, tool, taken->arguments, input_responses, state);
        // A round held back for a passing reason (the state backend did not
        // answer the gate, the family is at its cap) runs again with the same
        // input, as a plain call waits for a place in its family: the task is
        // not ended, nor the person's answers lost, for a moment's outage or
        // load. It waits at most kMostHoldBack, holding its task worker (one
        // owner holds at most all but one, TaskRunner), then ends with the
        // refusal; sooner when its task is stopped (cancelled, past
        // tasks.max_run_ms, no longer this instance's, the host stopping).
        if (outcome.held_back) {
            say(id, waiting_message(outcome));
            const auto running_again = [&] { say(id, "The task is running."); };
            const auto until = std::chrono::steady_clock::now() + kMostHoldBack;
            for (auto pause = kFirstHoldBackPause; outcome.held_back && std::chrono::steady_clock::now() < until;
                 pause = std::min(pause * 2, kLongestHoldBackPause)) {
                if (!sleep_unless_stopped(control, pause)) {
                    const StopReason why = control.why.load();
                    outcome.cancelled = why == StopReason::client || why == StopReason::deadline;
                    break;
                }
                outcome =
                    tool_call_.run_task_round(request, tool, taken->arguments, input_responses, state, running_again);
            }
        }
        observe_round(request, tool, outcome);
    }

    const auto& settings = store_.settings();
    const StopReason why = control.why.load();
    try {
        store_.update(id, [&](TaskRecord& r) {
            // Not a record another instance runs now, whatever this round found.
            if (terminal(r.status) || (r.status == Status::working && r.runner != runner_.instance()) ||
                why == StopReason::released)
                return false;
            r.runner.clear();
            r.plugin_keys = Json::object();
            r.input_requests = Json::object();
            if (why == StopReason::host_stopping) {
                r.status = Status::failed;
                r.error = {{"code", -32603},
                           {"message", "The host running this task stopped before it finished; start it again."}};
                r.status_message = r.error["message"];
                return true;
            }
            if (why == StopReason::unauthorised) {
                std::lock_guard lock(control.refusal_mutex);
                r.status = Status::completed;
                r.result = control.refusal;
                if (r.revision == protocol::revision_name(protocol::Revision::modern_2026_07_28))
                    r.result["resultType"] = "complete";
                r.status_message = "Stopped: the caller may no longer run this tool (" +
                                   r.result["structuredContent"].value("code", std::string("REFUSED")) + ").";
                return true;
            }
            // A round that stopped on a cancellation, or asked for input after
            // one was requested (its plugin did not look), ends the task cancelled.
            const bool cancel_asked = why == StopReason::client || r.cancel_requested;
            if (cancel_first ||
                (cancel_asked && (outcome.cancelled || outcome.kind == protocol::TaskRound::Kind::input_required))) {
                r.status = Status::cancelled;
                r.status_message = "Cancelled by the client.";
                return true;
            }
            switch (outcome.kind) {
            case protocol::TaskRound::Kind::result: {
                r.status = Status::completed;
                if (why == StopReason::deadline && outcome.cancelled) {
                    r.result = refused(gate::refusal_code::task_overran,
                                       "Tool '" + tool.name +
                                           "' was stopped: it ran longer than this server lets a "
                                           "task run (tasks.max_run_ms: " +
                                           std::to_string(settings.max_run_ms) + " ms).");
                } else if (outcome.body.dump(-1, ' ', false, Json::error_handler_t::replace).size() >
                           settings.max_result_bytes) {
                    r.result = refused(gate::refusal_code::result_too_large,
                                       "Tool '" + tool.name +
                                           "' finished, but its result is larger than this "
                                           "server keeps for a task (tasks.max_result_bytes: " +
                                           std::to_string(settings.max_result_bytes) + " bytes), so it was not kept.");
                } else {
                    r.result = std::move(outcome.body);
                }
                // Inlined as the original request's result: on the 2026-07-28
                // wire a CallToolResult says its resultType.
                if (r.revision == protocol::revision_name(protocol::Revision::modern_2026_07_28))
                    r.result["resultType"] = "complete";
                r.status_message =
                    r.result.value("isError", false) ? "The tool finished with an error." : "The task has completed.";
                return true;
            }
            case protocol::TaskRound::Kind::failed:
                r.status = Status::failed;
                r.error = std::move(outcome.body);
                r.status_message = r.error.value("message", std::string("The task failed."));
                return true;
            case protocol::TaskRound::Kind::input_required:
                if (r.job) {
                    // A job's client has nowhere to answer (no tasks/update).
                    r.status = Status::failed;
                    r.error = {{"code", protocol::error_code::missing_required_client_capability},
                               {"message", "Tool '" + tool.name +
                                               "' asked for input while running as a job, which "
                                               "a client without the " +
                                               std::string(kExtension) +
                                               " extension cannot give; call it from a client that declares the "
                                               "extension."},
                               {"data", {{"requiredCapabilities", required_extension()}}}};
                    r.status_message = r.error["message"];
                    return true;
                }
                r.status = Status::input_required;
                ++r.round;
                // The plugin's keys may repeat from round to round; the task's never do.
                for (auto& [key, asked] : outcome.body["inputRequests"].items()) {
                    const std::string task_key = "r" + std::to_string(r.round) + "." + key;
                    r.input_requests[task_key] = std::move(asked);
                    r.plugin_keys[task_key] = key;
                }
                r.plugin_state = outcome.body.value("requestState", std::string());
                r.answers = Json::object();
                r.status_message = "The task needs input from the client.";
                return true;
            }
            return false;
        });
    } catch (const state::BackendError& e) {
        spdlog::error("task {}: its outcome could not be written (its lease will lapse and it will read as "
                      "failed): {}",
                      id, e.what());
    }
}

void TaskCalls::observe_round(const Request& request, const plugins::Tool& tool,
                              const protocol::TaskRound& outcome) const {
    if (!observability_) return;
    using Kind = protocol::TaskRound::Kind;
    protocol::CallVerdict verdict;
    switch (outcome.kind) {
    case Kind::result: verdict = protocol::result_verdict(outcome.body, false); break;
    case Kind::input_required: verdict.outcome = metrics::CallOutcome::input_required; break;
    case Kind::failed:
        verdict.outcome = metrics::CallOutcome::protocol_error;
        if (const auto message = outcome.body.find("message"); message != outcome.body.end() && message->is_string())
            verdict.message = message->get_ref<const std::string&>();
        break;
    }
    if (outcome.cancelled) verdict.outcome = metrics::CallOutcome::cancelled;
    const auto [store, user] = request.findings->session();
    const auth::Principal& principal = request.principal;
    const std::string owner = principal.owner_key();
    metrics::CallRecord record;
    record.tool_key = &tool;
    record.family = tool.family;
    record.tool = tool.name;
    record.outcome = verdict.outcome;
    record.code = verdict.code;
    record.error_message = verdict.message;
    record.took = std::chrono::steady_clock::now() - request.received;
    record.started = request.received_at;
    record.principal = owner;
    record.principal_kind = principal.kind;
    record.client_id = principal.client_id;
    record.store = store;
    record.user = user;
    record.revision = protocol::revision_name(request.revision);
    record.transport = request.connection->transport;
    record.task_id = request.task_id;
    record.trace = &request.trace;
    observability_->tool_call(record);
}

std::string TaskCalls::task_id(const Request& request) const {
    const auto id = request.params.find("taskId");
    if (id == request.params.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
        throw ProtocolError(invalid_params, request.method + " needs params.taskId, the id the task was created with.");
    // No id this host mints is longer; a longer one is not looked up (nor paced) at all.
    if (id->get_ref<const std::string&>().size() > 128)
        throw ProtocolError(invalid_params, "Failed to retrieve task: Task not found (params.taskId is longer than "
                                            "any task id).");
    return id->get<std::string>();
}

const TaskRecord& TaskCalls::require(std::optional<TaskRecord>& found) {
    if (!found)
        throw ProtocolError(invalid_params, "Failed to retrieve task: Task not found (it never existed, has expired, "
                                            "or is another caller's).");
    return *found;
}

std::optional<std::uint64_t> TaskCalls::too_soon(const std::string& id, const std::string& owner) {
    // The id's length first: an id is the client's text, so it may hold the separator.
    const std::string key = "task-poll%%" + std::to_string(id.size()) + "%%" + id + owner;
    const std::array<limits::BucketDraw, 1> draws{limits::BucketDraw{key, &poll_pace_}};
    try {
        if (auto shortfall = poll_buckets_->take(draws, limits::BucketStore::Clock::now())) return shortfall->wait_ms;
    } catch (const state::BackendError&) {
        // The pace spares the host; the task's state itself is read next, and that read tells.
    }
    return std::nullopt;
}

void TaskCalls::pace(const std::string& id, const std::string& owner) {
    const auto wait_ms = too_soon(id, owner);
    if (!wait_ms) return;
    throw ProtocolError(protocol::error_code::internal_error,
                        "tasks/get came faster than this task's pollIntervalMs (" +
                            std::to_string(store_.settings().poll_interval_ms) + " ms); ask again in " +
                            std::to_string(*wait_ms) + " ms.",
                        {{"code", gate::refusal_code::polled_too_fast},
                         {"retryAfterMs", *wait_ms},
                         {"pollIntervalMs", store_.settings().poll_interval_ms}});
}

Json TaskCalls::get(Request& request) {
    if (!declared(request)) missing_extension("tasks/get");
    const std::string id = task_id(request);
    const std::string owner = request.principal.owner_key();
    pace(id, owner);
    std::optional<TaskRecord> found;
    try {
        found = store_.find(id, owner);
    } catch (const state::BackendError& e) {
        throw ProtocolError(protocol::error_code::internal_error,
                            std::string("The host cannot reach the state its tasks are kept in: ") + e.what(),
                            {{"code", gate::refusal_code::state_unavailable}});
    }
    return require(found).detailed();
}

Json TaskCalls::update(Request& request) {
    if (!declared(request)) missing_extension("tasks/update");
    const std::string id = task_id(request);
    const auto responses = request.params.find("inputResponses");
    if (responses == request.params.end() || !responses->is_object())
        throw ProtocolError(invalid_params, "tasks/update needs params.inputResponses: an object of the client's "
                                            "results, keyed like the task's inputRequests.");
    const std::string owner = request.principal.owner_key();
    bool resume = false;
    std::optional<TaskRecord> found;
    try {
        found = store_.find(id, owner);
        require(found);
        // Whoever answers drives the task's next round, so a token of the
        // same owner without the tool's scope is refused here, as its call
        // of the tool would be, and the task goes on waiting.
        if (const plugins::Tool* tool = registry_.current()->find(found->tool))
            if (auto refusal = protocol::scope_refusal(*tool, request.principal))
                throw ProtocolError(protocol::error_code::invalid_request, refusal->message,
                                    {{"code", refusal->code}, {"next", refusal->next}});
        // Answers to keys not outstanding (never asked, already answered) are ignored.
        found = store_.update(id, [&](TaskRecord& r) {
            resume = false;
            if (r.owner != owner || r.status != Status::input_required) return false;
            bool took = false;
            for (const auto& [key, answer] : responses->items()) {
                if (!r.input_requests.contains(key) || !answer.is_object()) continue;
                r.answers[r.plugin_keys[key].get<std::string>()] = answer;
                r.input_requests.erase(key);
                r.plugin_keys.erase(key);
                took = true;
            }
            if (!took) return false;
            if (r.input_requests.empty()) {
                r.status = Status::working;
                r.runner = runner_.instance();
                r.lease_until_ms = runner_.lease_until();
                r.status_message = "The task has its input and goes on.";
                resume = true;
            }
            return true;
        });
    } catch (const state::BackendError& e) {
        throw ProtocolError(protocol::error_code::internal_error,
                            std::string("The host cannot reach the state its tasks are kept in: ") + e.what(),
                            {{"code", gate::refusal_code::state_unavailable}});
    }
    if (resume && found) {
        // The next round runs here, on the instance that took the last answer.
        auto registry = registry_.current();
        const plugins::Tool* tool = registry->find(found->tool);
        if (!tool || !tool->plugin) {
            store_.update(id, [&](TaskRecord& r) {
                if (terminal(r.status)) return false;
                r.status = Status::failed;
                r.error = {{"code", -32603},
                           {"message", "Tool '" + r.tool +
                                           "' is not served by this host any more, so the task "
                                           "cannot go on."}};
                r.status_message = r.error["message"];
                r.runner.clear();
                return true;
            });
        } else {
            submit_round(id, *tool, request.principal, std::move(registry));
        }
    }
    return Json::object();
}

bool TaskCalls::cancel_task(const std::string& id, const std::string& owner) {
    bool running = false;
    bool unfinished = false;
    // A finished task stays as it is: the cancellation is acknowledged all the same.
    store_.update(id, [&](TaskRecord& r) {
        running = false;
        unfinished = r.owner == owner && !terminal(r.status);
        if (!unfinished) return false;
        // Before the test of an earlier cancellation: a round that asked for
        // input after one was requested left the task waiting, with the flag set.
        if (r.status == Status::input_required) {
            r.status = Status::cancelled;
            r.status_message = "Cancelled by the client.";
            r.input_requests = Json::object();
            r.plugin_keys = Json::object();
            return true;
        }
        if (r.cancel_requested) return false;
        r.cancel_requested = true;
        r.status_message = "Cancelling at the client's request.";
        running = true;
        return true;
    });
    if (running && !runner_.cancel(id, StopReason::client)) store_.publish_cancel(id);
    return unfinished;
}

Json TaskCalls::cancel(Request& request) {
    if (!declared(request)) missing_extension("tasks/cancel");
    const std::string id = task_id(request);
    const std::string owner = request.principal.owner_key();
    try {
        std::optional<TaskRecord> found = store_.find(id, owner);
        require(found);
        cancel_task(id, owner);
    } catch (const state::BackendError& e) {
        throw ProtocolError(protocol::error_code::internal_error,
                            std::string("The host cannot reach the state its tasks are kept in: ") + e.what(),
                            {{"code", gate::refusal_code::state_unavailable}});
    }
    return Json::object();
}

Json TaskCalls::answer_job(const plugins::Tool& tool, const Json& arguments, Request& request) {
    const std::string id = arguments.at("job").get<std::string>();
    const std::string owner = request.principal.owner_key();
    std::optional<TaskRecord> found;
    try {
        if (tool.name != protocol::ToolDisclosure::kJobCancel)
            if (auto wait_ms = too_soon(id, owner))
                return refused(gate::refusal_code::polled_too_fast,
                               "You asked about job " + id + " sooner than its pollIntervalMs (" +
                                   std::to_string(store_.settings().poll_interval_ms) + " ms) allows; ask again in " +
                                   std::to_string(*wait_ms) + " ms.",
                               {{"retryAfterMs", *wait_ms}});
        found = store_.find(id, owner);
        if (found && tool.name == protocol::ToolDisclosure::kJobCancel) {
            cancel_task(id, owner);
            found = store_.find(id, owner);
        }
    } catch (const state::BackendError&) {
        return tasks_unavailable();
    }
    if (!found)
        return refused(gate::refusal_code::job_not_found,
                       "There is no job '" + id +
                           "' of yours: it never existed, has expired, or is another caller's. Start the work "
                           "again to get a new one.");
    const TaskRecord& job = *found;
    if (tool.name == protocol::ToolDisclosure::kJobResult) {
        switch (job.status) {
        case Status::completed: {
            Json result = job.result;
            result.erase("resultType");
            return result;
        }
        case Status::failed:
            return refused(gate::refusal_code::job_failed,
                           "Job " + job.id + " failed: " + job.error.value("message", std::string()),
                           {{"job", job.id}});
        case Status::cancelled:
            return refused(gate::refusal_code::job_cancelled, "Job " + job.id + " was cancelled, so it has no result.",
                           {{"job", job.id}});
        default:
            return refused(gate::refusal_code::job_not_finished,
                           "Job " + job.id + " has not finished (" + status_name(job.status) + ": " +
                               job.status_message + "); ask again in " + std::to_string(job.poll_ms) + " ms.",
                           {{"job", job.id}, {"retryAfterMs", job.poll_ms}});
        }
    }
    Json state = {{"job", job.id},
                  {"tool", job.tool},
                  {"status", status_name(job.status)},
                  {"createdAt", iso8601(job.created_ms)},
                  {"lastUpdatedAt", iso8601(job.updated_ms)},
                  {"pollIntervalMs", job.poll_ms},
                  {"ttlMs", job.ttl_ms}};
    if (!job.status_message.empty()) state["statusMessage"] = job.status_message;
    std::string text = "Job " + job.id + " (tool '" + job.tool + "') is " + status_name(job.status);
    if (!job.status_message.empty()) text += ": " + job.status_message;
    if (!terminal(job.status))
        text += " Ask again in " + std::to_string(job.poll_ms) + " ms.";
    else if (job.status == Status::completed)
        text += " Fetch its result with job_result.";
    return {{"content", Json::array({{{"type", "text"}, {"text", text}}})}, {"structuredContent", std::move(state)}};
}

Json TaskCalls::follow(const Request& request, const Json& task_ids) {
    if (!declared(request)) missing_extension("subscriptions/listen for notifications.taskIds");
    if (!task_ids.is_array() || task_ids.size() > store_.settings().max_per_principal * 4u)
        throw ProtocolError(invalid_params, "params.notifications.taskIds must be an array of at most " +
                                                std::to_string(store_.settings().max_per_principal * 4u) +
                                                " task ids.");
    const std::string owner = request.principal.owner_key();
    Json honored = Json::array();
    for (const auto& id : task_ids) {
        if (!id.is_string())
            throw ProtocolError(invalid_params, "params.notifications.taskIds holds something that is not a task id.");
        try {
            if (store_.find(id.get<std::string>(), owner)) honored.push_back(id);
        } catch (const state::BackendError&) {
        }
    }
    return honored;
}

} // namespace gatehouse::tasks
