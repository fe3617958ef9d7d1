#include "transport/legacy_http_sessions.hpp"

#include "session/random_token.hpp"

#include <algorithm>

namespace gatehouse::transport {

LegacyHttpSessions::LegacyHttpSessions(std::size_t capacity, std::size_t per_principal, std::chrono::seconds idle)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      per_principal_(std::clamp<std::size_t>(per_principal, 1, std::max<std::size_t>(capacity, 1))), idle_(idle) {}

// Its requests still running are cancelled and its GET streams end.
void LegacyHttpSessions::end(const Entry& session) {
    session.connection->cancel_all();
    session.connection->outbound_ptr()->close();
}

LegacyHttpSessions::Table::iterator LegacyHttpSessions::erase(Table::iterator it) {
    end(it->second);
    if (const auto held = held_by_.find(it->second.owner); held != held_by_.end() && --held->second == 0)
        held_by_.erase(held);
    return sessions_.erase(it);
}

void LegacyHttpSessions::drop_idle(std::chrono::steady_clock::time_point now, const std::string* only_of) {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (now - it->second.last_used > idle_ && (!only_of || it->second.owner == *only_of))
            it = erase(it);
        else
            ++it;
    }
}

void LegacyHttpSessions::evict_from_largest_holder() {
    std::size_t most = 0;
    for (const auto& [owner, count] : held_by_)
        most = std::max(most, count);
    // Among the sessions of whoever holds the most (several may), the one
    // unused the longest.
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
        if (held_by_[it->second.owner] == most &&
            (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used))
            oldest = it;
    if (oldest != sessions_.end()) erase(oldest);
}

std::optional<std::string> LegacyHttpSessions::open(std::shared_ptr<protocol::Connection> connection) {
    const auto now = std::chrono::steady_clock::now();
    std::string owner = connection->principal().owner_key();
    std::lock_guard lock(mutex_);
    const auto held = [&] {
        const auto it = held_by_.find(owner);
        return it == held_by_.end() ? std::size_t{0} : it->second;
    };
    if (held() >= per_principal_) drop_idle(now, &owner);
    if (held() >= per_principal_) return std::nullopt;
    if (sessions_.size() >= capacity_) drop_idle(now, nullptr);
    if (sessions_.size() >= capacity_) evict_from_largest_holder();
    std::string id = session::random_token(16);
    ++held_by_[owner];
    sessions_.emplace(id, Entry{std::move(connection), std::move(owner), now});
    return id;
}

std::shared_ptr<protocol::Connection> LegacyHttpSessions::find(const std::string& id, const std::string& principal) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    if (now - it->second.last_used > idle_) {
        erase(it);
        return nullptr;
    }
    if (it->second.owner != principal) return nullptr;
    it->second.last_used = now;
    return it->second.connection;
}

bool LegacyHttpSessions::close(const std::string& id, const std::string& principal) {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.owner != principal) return false;
    erase(it);
    return true;
}

void LegacyHttpSessions::close_all() {
    std::lock_guard lock(mutex_);
    for (auto& [id, entry] : sessions_)
        end(entry);
    sessions_.clear();
    held_by_.clear();
}

std::size_t LegacyHttpSessions::size() {
    std::lock_guard lock(mutex_);
    return sessions_.size();
}

} // namespace gatehouse::transport
