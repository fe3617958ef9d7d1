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
class LegacyHttpSessions {
public:
    LegacyHttpSessions(std::size_t capacity, std::chrono::seconds idle);

    // A new session for `connection`; nullopt when the table is full even
    // after dropping idle sessions.
    std::optional<std::string> open(std::shared_ptr<protocol::Connection> connection);

    std::shared_ptr<protocol::Connection> find(const std::string& id, const std::string& principal);

    // Ends the session: its requests still running are cancelled, its GET
    // stream ends.
    bool close(const std::string& id, const std::string& principal);

    void close_all();

    std::size_t size();

private:
    struct Entry {
        std::shared_ptr<protocol::Connection> connection;
        std::chrono::steady_clock::time_point last_used;
    };
    static void end(const Entry& session);
    void drop_idle(std::chrono::steady_clock::time_point now);

    std::size_t capacity_;
    std::chrono::seconds idle_;
    std::mutex mutex_;
    std::unordered_map<std::string, Entry> sessions_;
};

} // namespace gatehouse::transport
