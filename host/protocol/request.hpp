#pragma once

#include "auth/principal.hpp"
#include "gate/refusal.hpp"
#include "metrics/trace_context.hpp"
#include "plugins/host_services.hpp"
#include "plugins/tool.hpp"
#include "protocol/connection.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/revision.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gatehouse::plugins {
class ToolRegistry;
}

namespace gatehouse::protocol {

class DeferredAnswer;

// A tools/call resolved at decode (RequestDecoder): the tool params.name
// names, its arguments, and the token layer's verdict. Nothing downstream
// reads params.name or looks the tool up again.
struct ToolTarget {
    // The registry it was found in, kept while the call runs: a family that
    // lists anew or leaves meanwhile does not take the tool from under it.
    std::shared_ptr<const plugins::ToolRegistry> registry;
    const plugins::Tool* tool = nullptr; // a family's tool, or a host meta tool; never null
    Json arguments = Json::object();     // params.arguments (an object), moved out of params
    // call_tool: the tool its arguments name, when they name one that
    // exists (its timeout and pace are the call's); else null.
    const plugins::Tool* forwarded = nullptr;
    // A verified token without the tool's scope: the refusal every route
    // to the tool meets (protocol/tool_call.hpp scope_refusal).
    std::optional<gate::Refusal> scope_refusal;
};

// The trace context a transport carries beside the message (HTTP's
// traceparent and tracestate headers); params._meta's wins over it.
struct TransportTrace {
    std::string_view traceparent;
    std::string_view tracestate;
};

// What the gate found of a tool call that its audit line names: the gate
// session's store and user. Written by the call's worker, read by whoever
// answers it (the worker, or its deadline).
class CallFindings {
public:
    void found_session(std::string store, std::string user) {
        std::lock_guard lock(mutex_);
        store_ = std::move(store);
        user_ = std::move(user);
    }
    std::pair<std::string, std::string> session() const {
        std::lock_guard lock(mutex_);
        return {store_, user_};
    }
    // The host's own rate limit refused the call: which one (a name from the
    // configuration, never from a result, so a metric label may carry it).
    void found_rate_limit(std::string limit) {
        std::lock_guard lock(mutex_);
        rate_limit_ = std::move(limit);
    }
    std::string rate_limit() const {
        std::lock_guard lock(mutex_);
        return rate_limit_;
    }

private:
    mutable std::mutex mutex_;
    std::string store_;
    std::string user_;
    std::string rate_limit_;
};

// One JSON-RPC request after the envelope and its era were decoded. Nothing
// downstream re-reads the raw message.
struct Request {
    Json id;
    std::string method;
    Json params = Json::object();
    Revision revision = Revision::modern_2026_07_28;
    std::optional<int> log_level; // lowest level to send as notifications/message; none: send none
    Json progress_token;          // null: no progress notifications
    Json client_capabilities = Json::object();
    std::optional<ToolTarget> call; // tools/call only
    // Who sent this request, as its transport authenticated it: every scope,
    // gate and owner check, and the call context, read this one. Over HTTP
    // it is the request's own token, which in a 2025-11-25 session may be
    // another token of the session's owner than the one that opened it;
    // `connection->principal()` is who opened the connection, never the
    // authority for a request.
    auth::Principal principal;
    Connection* connection = nullptr;
    // The host serving it: what a plugin reaches through the host functions.
    const plugins::HostServices* host = nullptr;
    // Where this request's notifications and answer go: the connection's own
    // outbound on stdio, the POST's response stream over HTTP.
    std::shared_ptr<Outbound> reply;
    std::shared_ptr<InFlight> in_flight;
    // The task this request is a round of (tasks/); empty for a plain request.
    std::string task_id;
    // Its span in the caller's trace (or a trace of its own), named in every
    // log line of the request, its audit line, and its plugin's call context.
    metrics::TraceContext trace;
    // When it was decoded: its duration, and its span's start.
    std::chrono::steady_clock::time_point received{};
    std::chrono::system_clock::time_point received_at{};
    // A tools/call's: what the gate found, for its audit line.
    std::shared_ptr<CallFindings> findings;
    // Set by the scheduler for a request it keeps at one address until its
    // answer, whose tool call may therefore be answered later, on the thread
    // that hears its family (DeferredAnswer); and by such a call that does.
    bool may_answer_later = false;
    std::shared_ptr<DeferredAnswer> deferred;

    bool cancelled() const { return in_flight && in_flight->cancelled.load(std::memory_order_relaxed); }
};

// A request admitted to run plugin code, handed back to the transport that
// read it. Where it runs (the reader's thread, an I/O loop, the worker pool)
// is the transport's choice, made in one place (transport/call_placement.hpp);
// nothing captures it on the side.
struct ReadyCall {
    std::function<void()> run;
    // A call of a tool whose recent calls all returned quickly (plugins::CallPace).
    bool quick = false;
    // A 2025-11-25 call may send client requests of its own and wait for their answers.
    bool legacy = false;
    // Its family runs in another process (plugins::LoadedPlugin::remote):
    // the call's thread waits, idle, for that process to answer.
    bool remote = false;
    // No other call of this host was in flight when it was admitted.
    bool alone = false;
    // Validating its arguments or result runs std::regex (schema::JsonSchema::
    // uses_regex), which recurses per character: it needs a worker's stack.
    bool needs_worker_stack = false;
    // Its family answers later, on the thread that reads that family's
    // process (DeferredAnswer): the call's thread only passes the gate and
    // sends the call, and waits for nothing.
    bool answers_later = false;
    // Its family runs one call at a time (not reentrant): the call first
    // waits for the family's lock, behind whatever holds it.
    bool serialized = false;

    explicit operator bool() const { return static_cast<bool>(run); }
};

} // namespace gatehouse::protocol
