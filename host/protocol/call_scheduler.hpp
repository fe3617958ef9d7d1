#pragma once

#include "config/config.hpp"
#include "limits/call_deadlines.hpp"
#include "limits/in_flight_limits.hpp"

#include <atomic>
#include "protocol/method_table.hpp"
#include "protocol/request.hpp"
#include "protocol/request_pool.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace gatehouse::protocol {

// The way of a request that runs plugin code from its decoding to its
// answer: its place among the in-flight caps (TOO_MANY_IN_FLIGHT), its
// deadline (counted from now, not from when a worker is free), a place in
// its plugin (max_in_flight_per_plugin), then the job, handed back for the
// transport to place. Whoever claims the answer (the job, or the deadline)
// sends it and gives the places back, once.
class CallScheduler {
public:
    // What an admitted request's answer is observed with, whoever sends it
    // (its job, or its deadline): taken at admission, as the request itself
    // moves into its job.
    struct Admitted {
        Json id;
        std::string method;
        Revision revision = Revision::modern_2026_07_28;
        const plugins::Tool* tool = nullptr; // the tool a tools/call runs (call_tool's forwarded one)
        metrics::TraceContext trace;
        std::chrono::steady_clock::time_point received;
        std::chrono::system_clock::time_point received_at;
        auth::Principal principal; // the request's sender (Request::principal)
        std::string owner;         // its owner key, as the in-flight caps counted it
        const char* transport = "";
        std::shared_ptr<CallFindings> findings;
        // The registry `tool` is of, kept while the call or its deadline may read it.
        std::shared_ptr<const void> registry;
    };
    // How it ended: answered (`response`, `timed_out` when the deadline
    // answered it), or cancelled (no response). `arguments`: the call's,
    // while its request is alive (null from the deadline).
    struct Ending {
        const Json* response = nullptr;
        bool timed_out = false;
        const Json* arguments = nullptr;
    };
    using Observe = std::function<void(const Admitted&, const Ending&)>;

    // Answers the request with its method's handler, finished for its revision.
    using Dispatch = std::function<Json(Request&, const MethodTable::Method&)>;
    // The final answer for a result: what the revision adds to it.
    using Finish = std::function<Json(const Json& id, Revision revision, Json result)>;

    CallScheduler(RequestPool& pool, const config::Limits& limits, Dispatch dispatch, Finish finish,
                  Observe observe = nullptr);

    // The job when it may run now; empty when the request was answered at
    // once (a cap refused it) or waits for a place in its plugin (it then
    // runs on the pool when its turn comes).
    ReadyCall admit(const std::shared_ptr<Connection>& connection, Request&& request,
                    const MethodTable::Method& method);

    // Requests accepted and not yet answered, across all connections.
    // Admitted and not yet answered: a place is given back just before its
    // answer is sent (so a client that saw it may call again at once), and
    // this counts until the answer has gone out, or was given up.
    unsigned in_flight() const { return unanswered_.load(); }

    // Until every call whose answer comes later (DeferredAnswer) has been
    // answered, or `grace` passed (false): what those answers reach must
    // stay until then.
    bool await_later_answers(std::chrono::milliseconds grace) { return later_.await_none(grace); }

private:
    // What the job and the deadline of one admitted request share, in one
    // allocation: whoever claims the answer gives the places back through it.
    struct Running {
        CallScheduler* scheduler;
        Admitted admitted;
        std::shared_ptr<Connection> connection;
        std::shared_ptr<InFlight> state;
        std::shared_ptr<Outbound> reply;
        std::uint64_t timeout_ms;
    };
    // Its places among the in-flight caps and in its connection's table.
    void give_back(const Running& call);
    // The job's end, whoever runs it: the deadline withdrawn, the answer
    // claimed and sent (none for a cancelled request), the places given back.
    void answer(const Request& request, limits::CallDeadlines::Ticket ticket, const Running& running,
                const Json& response);
    // The deadline passed before the job answered: TOOL_TIMEOUT, unless the
    // job or a cancellation came first.
    void time_out(const Running& call);
    Json timeout_result(const plugins::Tool* tool, std::uint64_t timeout_ms) const;

    RequestPool& pool_;
    const std::uint64_t tool_timeout_ms_;
    Dispatch dispatch_;
    Finish finish_;
    Observe observe_;
    limits::InFlightLimits in_flight_;
    std::atomic<unsigned> unanswered_{0};
    // The calls whose answer may come later, counted until all of each is gone.
    class LaterAnswers {
    public:
        // One more; it is counted until the last copy of what this returns goes.
        std::shared_ptr<void> count();
        bool await_none(std::chrono::milliseconds grace);

    private:
        std::mutex mutex_;
        std::condition_variable none_;
        unsigned count_ = 0;
    } later_;
    limits::CallDeadlines deadlines_; // last: its thread stops before the rest its actions use
};

} // namespace gatehouse::protocol
