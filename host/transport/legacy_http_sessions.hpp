#pragma once

#include "protocol/connection.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gatehouse::transport {

// The 2025-11-25 Mcp-Session-Id records of the HTTP transport: the legacy
// handshake's connection state, kept in this process only. A session is
// bound to the principal that opened it; an id presented by anyone else,
// unknown, ended or idle too long is not found (HTTP 404).
//
// One principal holds at most `per_principal` of the `capacity` sessions.
// When the table is full, sessions idle too long go first, then the least
// recently used session of whoever holds the most: a newcomer always finds
// room, and no principal can lock the others out.
class LegacyHttpSessions {
public:
    LegacyHttpSessions(std::size_t capacity, std::size_t per_principal, std::chrono::seconds idle);

    // A new session for `connection`, owned by its principal; nullopt when
    // that principal already holds its share even after its idle sessions
    // were dropped.
    std::optional<std::string> open(std::shared_ptr<protocol::Connection> connection);

    std::shared_ptr<protocol::Connection> find(const std::string& id, const std::string& principal);

    // Ends the session: its requests still running are cancelled, its GET
    // streams end.
    bool close(const std::string& id, const std::string& principal);

    void close_all();

    std::size_t size();
    std::size_t per_principal() const { return per_principal_; }

private:
    struct Entry {
        std::shared_ptr<protocol::Connection> connection;
        std::string owner;
        std::chrono::steady_clock::time_point last_used;
    };
    using Table = std::unordered_map<std::string, Entry>;
    static void end(const Entry& session);
    Table::iterator erase(Table::iterator it); // ends the session
    void drop_idle(std::chrono::steady_clock::time_point now, const std::string* only_of);
    void evict_from_largest_holder();

    std::size_t capacity_;
    std::size_t per_principal_;
    std::chrono::seconds idle_;
    std::mutex mutex_;
    Table sessions_;
    std::unordered_map<std::string, std::size_t> held_by_;
};

} // namespace gatehouse::transport
