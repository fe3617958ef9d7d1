#pragma once

#include "auth/principal.hpp"
#include "protocol/connection.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gatehouse::protocol {
class McpServer;
}
namespace gatehouse::state {
class NotificationBus;
class StateBackend;
struct SessionMessage;
} // namespace gatehouse::state

namespace gatehouse::transport {

// The 2025-11-25 Mcp-Session-Id records of the HTTP transport: the legacy
// handshake's connection state. A session is bound to the owner
// (auth::Principal::owner_key) that opened it; an id presented by anyone
// else, unknown, ended or idle too long is not found (HTTP 404). It holds
// no token's scopes: each request in it, on whichever instance, is
// authorised as the token that sent it (protocol::Request::principal).
//
// On one instance the table is all there is. Shared (share(), when the host's
// state backend and bus are Redis), every session's record (negotiated
// state, log level, client capabilities, resource subscriptions) lives in
// the backend, written before the request that changed it is answered, so
// the session's requests may land on any instance: each keeps a copy of
// the connections it has served, brought up to the record on every request.
// A GET stream lives on the instance holding it; changes reach it over the
// bus, and the client's answers and cancellations that land elsewhere are
// relayed to the instance whose request waits for them.
//
// One principal holds at most `per_principal` of the `capacity` sessions of
// this instance. When the table is full, sessions idle too long go first,
// then the least recently used session of whoever holds the most: a
// newcomer always finds room, and no principal can lock the others out.
class LegacyHttpSessions {
public:
    using MakeConnection = std::function<std::shared_ptr<protocol::Connection>(const auth::Principal&)>;

    LegacyHttpSessions(std::size_t capacity, std::size_t per_principal, std::chrono::seconds idle);
    ~LegacyHttpSessions();

    // Keeps the records in `records` and hears the other instances on
    // `bus`. `make` makes this instance's copy of a session's connection.
    void share(state::StateBackend& records, state::NotificationBus& bus, protocol::McpServer& server,
               MakeConnection make);
    bool shared() const { return sharing_ != nullptr; }

    // A new session for `connection`, owned by its principal; nullopt when
    // that principal already holds its share even after its idle sessions
    // were dropped. Shared: throws state::BackendError when the record
    // cannot be written.
    std::optional<std::string> open(std::shared_ptr<protocol::Connection> connection);

    // The session `id` when `principal` owns it (the same owner key, whatever
    // its token's scopes). Shared: throws state::BackendError when the
    // record cannot be read.
    std::shared_ptr<protocol::Connection> find(const std::string& id, const auth::Principal& principal);

    // Ends the session: its requests still running are cancelled, it stops
    // following changes on the bus, its GET streams end (on every instance,
    // when shared).
    bool close(const std::string& id, const std::string& owner);

    // A client's response or cancellation for session `id`: the request it
    // concerns may run on another instance. False when the shared bus did
    // not take it.
    bool relay_client_message(const std::string& id, const protocol::Json& message);

    void close_all();

    std::size_t size();
    std::size_t per_principal() const { return per_principal_; }

private:
    struct Sharing;
    struct Entry {
        std::shared_ptr<protocol::Connection> connection;
        std::string owner;
        std::chrono::steady_clock::time_point last_used;
        std::chrono::steady_clock::time_point record_touched;
    };
    using Table = std::unordered_map<std::string, Entry>;
    static void end(const Entry& session);
    Table::iterator erase(Table::iterator it); // ends the session here
    void drop_idle(std::chrono::steady_clock::time_point now, const std::string* only_of);
    void evict_from_largest_holder();
    void make_room(std::chrono::steady_clock::time_point now);
    std::shared_ptr<protocol::Connection> find_shared(const std::string& id, const auth::Principal& principal);
    void on_relayed(const state::SessionMessage& message);

    std::size_t capacity_;
    std::size_t per_principal_;
    std::chrono::seconds idle_;
    std::shared_ptr<Sharing> sharing_;
    std::mutex mutex_;
    Table sessions_;
    std::unordered_map<std::string, std::size_t> held_by_;
};

} // namespace gatehouse::transport
