#pragma once

#include "auth/principal.hpp"
#include "mrtr/client_requests.hpp"
#include "protocol/json_rpc.hpp"
#include "state/bus_listener.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gatehouse::protocol {

// Where a connection's messages go. Implementations are thread-safe: many
// requests of one connection answer concurrently.
class Outbound {
public:
    virtual ~Outbound() = default;
    virtual void send(const Json& message) = 0;
    // An error answer that refuses the request as malformed before any method
    // ran (its params, _meta or revision): HTTP answers it with 400.
    virtual void reject(const Json& message) { send(message); }
    // A request that was answered through this outbound ended without an
    // answer (it was cancelled). Stdio has nothing to do; an HTTP response
    // stream waiting for the answer is closed.
    virtual void ended_without_answer() {}
    // The connection it serves has ended (a 2025-11-25 session closed): a
    // stream held open for the connection's own messages ends too.
    virtual void close() {}
};

// One request still running, as far as cancellation and its answer are concerned.
struct InFlight {
    // The plugin should stop: the client cancelled, or the call's deadline passed.
    std::atomic<bool> cancelled{false};

    // Sets the flag and runs the cancel action, once. A request with a thread
    // of its own polls the flag; a long-lived one without (a subscription)
    // registers an action.
    void cancel();
    // Runs `action` on cancel (at once when already cancelled).
    void on_cancel(std::function<void()> action);

    // Exactly one of the worker and the deadline answers (or, after a
    // cancellation, gives up the answer); whoever this returns true for.
    bool claim_answer() { return !answered_.exchange(true); }

private:
    std::mutex mutex_;
    std::function<void()> action_;
    std::atomic<bool> answered_{false};
};

// What a connection remembers. For 2026-07-28 nothing of the protocol lives
// here; only the 2025-11-25 handshake does, scoped to this connection as the
// spec asks.
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(std::shared_ptr<Outbound> outbound, auth::Principal principal)
        : outbound_(std::move(outbound)), principal_(std::move(principal)) {}

    Outbound& outbound() { return *outbound_; }
    const std::shared_ptr<Outbound>& outbound_ptr() const { return outbound_; }
    // Who opened the connection (a 2025-11-25 HTTP session's: its owner,
    // with no scopes). A request is authorised as Request::principal, the
    // sender its transport authenticated, never as this.
    const auth::Principal& principal() const { return principal_; }

    // Which transport the connection came by (stdio, http, or task for a
    // task's own): what its calls' audit lines and spans name.
    const char* transport = "stdio";

    // The 2025-11-25 handshake.
    std::atomic<bool> legacy_initialized{false};
    std::atomic<int> legacy_log_level{-1}; // -1: logging/setLevel never called
    std::mutex legacy_mutex;               // guards the fields below
    Json legacy_client_capabilities = Json::object();
    // resources/subscribe: uri -> its listener on the bus.
    std::map<std::string, state::BusListener> legacy_resource_subscriptions;
    state::BusListener legacy_list_changes; // tools/, prompts/, resources/list_changed (from initialize)
    bool legacy_following_ended = false;    // stop_following() ran: nothing is followed any more

    // The session ended (DELETE, expiry, eviction, shutdown): its listeners
    // leave the bus now, not when the last request still holding the
    // connection lets go of it, and none is added after. The subscribed
    // URIs stay, as the handshake this copy last knew (a request finishing
    // on it may still write its record). Destroying the connection takes its
    // listeners off as well.
    void stop_following();

    // Runs after the handshake's fields above changed (initialize,
    // logging/setLevel, resources/subscribe): a 2025-11-25 HTTP session
    // shared by several instances writes its record here, before the
    // request is answered. May throw state::BackendError. Set once, before
    // the connection serves.
    std::function<void(Connection&)> handshake_changed;
    // Calls handshake_changed; when the record cannot be written, runs
    // `undo` (so this instance does not drift from the record) and throws
    // the ProtocolError a client sees: STATE_UNAVAILABLE.
    void record_handshake(const std::function<void()>& undo);

    // Requests in flight, by their id's JSON text, for notifications/cancelled.
    std::shared_ptr<InFlight> begin(const Json& id);
    // The same, unless a request under `id` is still in flight (then null):
    // for a request that stays open, whose id addresses it until it ends.
    std::shared_ptr<InFlight> begin_unique(const Json& id);
    void end(const Json& id);
    // Forgets `state` under `id`; a newer request that reused the id stays.
    void end(const Json& id, const std::shared_ptr<InFlight>& state);
    void cancel(const Json& id);
    void cancel_all();

    // 2025-11-25: what the host asked the client in the middle of a request,
    // waiting for the client's responses.
    mrtr::ClientRequests& client_requests() { return client_requests_; }

private:
    mrtr::ClientRequests client_requests_;
    std::shared_ptr<Outbound> outbound_;
    auth::Principal principal_;
    std::mutex in_flight_mutex_;
    std::unordered_map<std::string, std::shared_ptr<InFlight>> in_flight_;
};

} // namespace gatehouse::protocol
