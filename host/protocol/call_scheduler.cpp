#include "protocol/call_scheduler.hpp"

#include "gate/refusal.hpp"
#include "metrics/log_context.hpp"
#include "plugins/loaded_plugin.hpp"
#include "protocol/deferred_answer.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

namespace gatehouse::protocol {

namespace {

// The tool whose plugin a tools/call runs: call_tool's is the tool it forwards to.
const plugins::Tool* running_tool(const Request& request) {
    if (!request.call) return nullptr;
    return request.call->forwarded ? request.call->forwarded : request.call->tool;
}

// The arguments of that tool, for the audit line: call_tool's are the ones it
// forwards, not its own {name, arguments}.
const Json* running_arguments(const Request& request) {
    if (!request.call) return nullptr;
    if (!request.call->forwarded) return &request.call->arguments;
    const auto inner = request.call->arguments.find("arguments");
    return inner != request.call->arguments.end() ? &*inner : nullptr;
}

// The place a call answered later holds in its family (LoadedPlugin::admit),
// handed on once: by its answer, or when nothing can answer it any more.
class AdmittedPlace {
public:
    explicit AdmittedPlace(const plugins::Tool* tool) : tool_(tool) {}
    AdmittedPlace(const AdmittedPlace&) = delete;
    AdmittedPlace& operator=(const AdmittedPlace&) = delete;
    ~AdmittedPlace() { hand_on(); }

    // The thread that began the call is done with it.
    void begun() { beginning_ = false; }

    // The next parked call that only sends runs on this thread, unless this
    // is the thread still beginning this call (its family was down and
    // answered at once): never a chain of parked calls on one stack. A fault
    // in it is logged; it never leaves (a destructor calls this).
    void hand_on() {
        if (handed_.exchange(true) || !tool_) return;
        try {
            tool_->plugin->hand_on_place(!beginning_.load());
        } catch (const std::exception& e) {
            spdlog::error("a parked call failed and was abandoned: {}", e.what());
        }
    }

private:
    const plugins::Tool* tool_;
    std::atomic<bool> beginning_{true};
    std::atomic<bool> handed_{false};
};

} // namespace

CallScheduler::CallScheduler(RequestPool& pool, const config::Limits& limits, Dispatch dispatch, Finish finish,
                             Observe observe)
    : pool_(pool), tool_timeout_ms_(limits.tool_timeout_ms), dispatch_(std::move(dispatch)), finish_(std::move(finish)),
      observe_(std::move(observe)), in_flight_(limits.max_in_flight, limits.max_in_flight_per_principal) {}

ReadyCall CallScheduler::admit(const std::shared_ptr<Connection>& connection, Request&& request,
                               const MethodTable::Method& method) {
    std::string principal = request.principal.owner_key();
    if (auto full = in_flight_.acquire(principal)) {
        const Json refused = make_error(
            request.id, error_code::internal_error, full->message,
            {{"code", gate::refusal_code::too_many_in_flight}, {"limit", full->limit}, {"maxInFlight", full->value}});
        // Counted and audited as every answered request is: a refusal by a
        // limit is what an operator looks for first.
        if (observe_) {
            if (request.call) request.findings = std::make_shared<CallFindings>();
            const Admitted admitted{
                request.id,           request.method,        request.revision,    running_tool(request),
                request.trace,        request.received,      request.received_at, request.principal,
                std::move(principal), connection->transport, request.findings,    nullptr};
            observe_(admitted, {&refused, false, running_arguments(request)});
        }
        request.reply->send(refused);
        return {};
    }
    const bool alone = ++unanswered_ == 1;
    const plugins::Tool* tool = running_tool(request);
    const std::uint64_t timeout_ms =
        tool && tool->plugin ? tool->plugin->call_limits().tool_timeout_ms : tool_timeout_ms_;

    auto state = connection->begin(request.id);
    request.in_flight = state;
    if (request.call && observe_) request.findings = std::make_shared<CallFindings>();
    auto running = std::make_shared<const Running>(Running{
        this,
        Admitted{request.id, request.method, request.revision, tool, request.trace, request.received,
                 request.received_at, request.principal, std::move(principal), connection->transport, request.findings,
                 request.call ? std::shared_ptr<const void>(request.call->registry) : nullptr},
        connection, std::move(state), request.reply, timeout_ms});
    const auto ticket = deadlines_.schedule(limits::CallDeadlines::Clock::now() + std::chrono::milliseconds(timeout_ms),
                                            [running] { running->scheduler->time_out(*running); });
    const bool tool_call = request.call && tool->plugin;
    std::shared_ptr<plugins::CallPace> pace = tool_call ? tool->pace : nullptr;
    const bool quick = pace && pace->quick();
    const bool regex = tool_call && ((tool->input_schema && tool->input_schema->uses_regex()) ||
                                     (tool->output_schema && tool->output_schema->uses_regex()));
    const bool legacy = request.revision == Revision::legacy_2025_11_25;
    // The request is kept at one address until its answer, which may come
    // later, on the thread that hears its family (DeferredAnswer), in either
    // revision (a 2025-11-25 call whose plugin asks for input goes on on a
    // worker, DeferredAnswer::run_elsewhere_when). Not so a call whose
    // schemas run std::regex: its result would be checked where the answer
    // is heard, on a thread with a plain stack (see ReadyCall). Nor a call of
    // a tool that may run as a task, or one call_tool forwards: those run on
    // the calling thread (ToolCall), and a job that says it only sends must
    // never wait for its family (a parked one may run on the thread that
    // hears that family, LoadedPlugin::hand_on_place).
    const bool answers_later = tool_call && !regex && tool->plugin->answers_later() &&
                               tool->task_support == plugins::TaskSupport::none && !request.call->forwarded;
    auto kept = std::make_shared<Request>(std::move(request));
    kept->may_answer_later = answers_later;
    auto job = [this, request = std::move(kept), method = &method, ticket, running, pace]() -> bool {
        // Counted among the answers that may come later from before its
        // dispatch (which may begin it) until every part of it is gone.
        std::shared_ptr<void> counted = request->may_answer_later ? later_.count() : nullptr;
        metrics::LogScope scope(&request->trace);
        // A call cancelled while it waited for a worker must not reach its
        // plugin at all: the tool may write, spend or destroy.
        if (request->cancelled()) {
            answer(*request, ticket, *running, Json());
            return true;
        }
        const auto began = std::chrono::steady_clock::now();
        Json response = dispatch_(*request, *method);
        if (auto deferred = std::move(request->deferred)) {
            // What its answer needs, gone in this order: the count last, so
            // that the host's stop, which waits for it, finds nothing of the
            // call left (its request, its connection, its registry).
            struct Answering {
                std::shared_ptr<void> counted;
                std::shared_ptr<Request> request;
                std::shared_ptr<const Running> running;
                limits::CallDeadlines::Ticket ticket;
                std::shared_ptr<plugins::CallPace> pace;
                std::chrono::steady_clock::time_point began;
                // Its place in its family, handed on once: after its answer,
                // or when its answer can no longer come (the work carrying
                // it was dropped).
                std::shared_ptr<AdmittedPlace> place;
            };
            auto place = std::make_shared<AdmittedPlace>(running->admitted.tool);
            deferred->begin(
                [this, state = Answering{std::move(counted), request, running, ticket, pace, began, place}](
                    const DeferredAnswer::Below& below) {
                    // However this ends (a fault is the answering thread's
                    // to log), the call's place in its family goes on.
                    struct HandOn {
                        AdmittedPlace& place;
                        ~HandOn() { place.hand_on(); }
                    } hand_on{*state.place};
                    metrics::LogScope scope(&state.request->trace);
                    const Json response = below();
                    if (state.pace) state.pace->record(std::chrono::steady_clock::now() - state.began);
                    answer(*state.request, state.ticket, *state.running, response);
                },
                // A family's host functions in a call: ahead of calls still queued.
                [this](std::function<void()> work) { pool_.submit_first(std::move(work)); });
            place->begun();
            return false;
        }
        if (pace) pace->record(std::chrono::steady_clock::now() - began);
        answer(*request, ticket, *running, response);
        return true;
    };
    // A tool call waits for a place in its plugin (max_in_flight_per_plugin)
    // before it takes a worker. A parked one runs when a call of its plugin
    // ends and hands it the place: on the worker that ran that call, right
    // after it (submit_next), not on another one woken while this one goes
    // to sleep; a call that ended off the pool (an I/O loop) queues it there.
    std::function<void()> run;
    if (tool_call)
        run = tool->plugin->admit(
            std::move(job), [this](std::function<void()> admitted) { pool_.submit_next(std::move(admitted)); },
            answers_later);
    else
        run = [job = std::move(job)] { job(); };
    const bool remote = tool_call && tool->plugin->remote();
    ReadyCall ready{std::move(run), quick, legacy, remote, alone, regex};
    ready.answers_later = answers_later;
    ready.serialized = tool_call && !tool->plugin->reentrant();
    return ready;
}

void CallScheduler::answer(const Request& request, limits::CallDeadlines::Ticket ticket, const Running& running,
                           const Json& response) {
    deadlines_.withdraw(ticket);
    if (!request.in_flight->claim_answer()) {
        spdlog::debug("discarding the late answer to request {} (it timed out)", request.id.dump());
        return;
    }
    give_back(running);
    const Json* arguments = running_arguments(request);
    // A cancelled request gets no answer at all, as the spec asks.
    if (!request.cancelled()) {
        if (observe_) observe_(running.admitted, {&response, false, arguments});
        request.reply->send(response);
    } else {
        if (observe_) observe_(running.admitted, {nullptr, false, arguments});
        request.reply->ended_without_answer();
    }
    --unanswered_;
}

std::shared_ptr<void> CallScheduler::LaterAnswers::count() {
    {
        std::lock_guard lock(mutex_);
        ++count_;
    }
    return std::shared_ptr<void>(this, [](LaterAnswers* answers) {
        std::lock_guard lock(answers->mutex_);
        if (--answers->count_ == 0) answers->none_.notify_all();
    });
}

bool CallScheduler::LaterAnswers::await_none(std::chrono::milliseconds grace) {
    std::unique_lock lock(mutex_);
    return none_.wait_for(lock, grace, [this] { return count_ == 0; });
}

void CallScheduler::give_back(const Running& call) {
    call.connection->end(call.admitted.id, call.state);
    in_flight_.release(call.admitted.owner);
}

void CallScheduler::time_out(const Running& call) {
    if (!call.state->claim_answer()) return; // answered already
    if (call.state->cancelled.load()) {
        // Cancelled and still unanswered at its deadline: parked behind a
        // family at its cap (whose places a stuck plugin may never give
        // back), or its plugin ignoring the cancellation. It gets no answer,
        // but its places go back now, not when (if ever) it runs: a caller
        // whose cancelled calls held their places would be locked out by
        // max_in_flight_per_principal, and every caller by max_in_flight.
        give_back(call);
        if (observe_) observe_(call.admitted, {nullptr, false, nullptr});
        call.reply->ended_without_answer();
        --unanswered_;
        return;
    }
    const plugins::Tool* tool = call.admitted.tool;
    metrics::LogScope scope(&call.admitted.trace);
    call.state->cancel(); // sets what the plugin polls through is_cancelled
    spdlog::warn("tool '{}' did not finish within {} ms; cancelled, and its late result will be discarded",
                 tool ? tool->name : std::string(), call.timeout_ms);
    give_back(call); // before the answer: a client that saw it may send the next call at once
    const Json response = finish_(call.admitted.id, call.admitted.revision, timeout_result(tool, call.timeout_ms));
    if (observe_) observe_(call.admitted, {&response, true, nullptr});
    call.reply->send(response);
    --unanswered_;
}

Json CallScheduler::timeout_result(const plugins::Tool* tool, std::uint64_t timeout_ms) const {
    const bool own = tool && tool->plugin && tool->plugin->call_limits().tool_timeout_overridden;
    const std::string limit = own ? std::string("tool_timeout_ms of its ") + tool->plugin->entry_section() + " entry"
                                  : std::string("limits.tool_timeout_ms");
    const std::string name = tool ? tool->name : std::string();
    gate::Refusal r;
    r.code = gate::refusal_code::tool_timeout;
    r.message = "Tool '" + name + "' took longer than " + std::to_string(timeout_ms) +
                " ms, this server's limit for it (" + limit +
                "); the host cancelled the call and will discard any late result. Try again with less work, or "
                "later.";
    r.next = {{"timeoutMs", timeout_ms}};
    return r.to_tool_result();
}

} // namespace gatehouse::protocol
