#include "transport/legacy_http_sessions.hpp"

#include "session/random_token.hpp"

namespace gatehouse::transport {

LegacyHttpSessions::LegacyHttpSessions(std::size_t capacity, std::chrono::seconds idle)
    : capacity_(capacity), idle_(idle) {}

// Its requests still running are cancelled and its GET stream ends.
void LegacyHttpSessions::end(const Entry& session) {
    session.connection->cancel_all();
    session.connection->outbound_ptr()->close();
}

void LegacyHttpSessions::drop_idle(std::chrono::steady_clock::time_point now) {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (now - it->second.last_used > idle_) {
            end(it->second);
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
}

std::optional<std::string> LegacyHttpSessions::open(std::shared_ptr<protocol::Connection> connection) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    if (sessions_.size() >= capacity_) drop_idle(now);
    if (sessions_.size() >= capacity_) return std::nullopt;
    std::string id = session::random_token(16);
    sessions_.emplace(id, Entry{std::move(connection), now});
    return id;
}

std::shared_ptr<protocol::Connection> LegacyHttpSessions::find(const std::string& id, const std::string& principal) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    if (now - it->second.last_used > idle_) {
        it->second.connection->cancel_all();
        sessions_.erase(it);
        return nullptr;
    }
    if (it->second.connection->principal().subject != principal) return nullptr;
    it->second.last_used = now;
    return it->second.connection;
}

bool LegacyHttpSessions::close(const std::string& id, const std::string& principal) {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.connection->principal().subject != principal) return false;
    end(it->second);
    sessions_.erase(it);
    return true;
}

void LegacyHttpSessions::close_all() {
    std::lock_guard lock(mutex_);
    for (auto& [id, entry] : sessions_)
        end(entry);
    sessions_.clear();
}

std::size_t LegacyHttpSessions::size() {
    std::lock_guard lock(mutex_);
    return sessions_.size();
}

} // namespace gatehouse::transport
