#include "state/notification_bus.hpp"

#include <spdlog/spdlog.h>

#include <vector>

namespace gatehouse::state {

std::uint64_t NotificationBus::subscribe(Listener listener) {
    std::lock_guard lock(mutex_);
    const auto token = next_++;
    listeners_.emplace(token, std::move(listener));
    return token;
}

void NotificationBus::unsubscribe(std::uint64_t token) {
    std::lock_guard lock(mutex_);
    listeners_.erase(token);
}

std::size_t NotificationBus::listener_count() {
    std::lock_guard lock(mutex_);
    return listeners_.size();
}

// Held while a message is delivered, so that once the listener is taken
// away (on_session_message({})) it is never called again.
void NotificationBus::on_session_message(SessionListener listener) {
    std::lock_guard lock(session_mutex_);
    session_listener_ = std::move(listener);
}

void NotificationBus::deliver(const Change& change) {
    // Copied out, so a listener may unsubscribe (or a subscriber open) while
    // the change is delivered.
    std::vector<Listener> targets;
    {
        std::lock_guard lock(mutex_);
        targets.reserve(listeners_.size());
        for (const auto& [_, listener] : listeners_)
            targets.push_back(listener);
    }
    // One listener's fault costs it this change; the others still hear it.
    for (const auto& listener : targets)
        try {
            listener(change);
        } catch (const std::exception& e) {
            spdlog::warn("bus: a listener failed on a change: {}", e.what());
        }
}

void NotificationBus::deliver(const SessionMessage& message) {
    std::lock_guard lock(session_mutex_);
    if (session_listener_) session_listener_(message);
}

} // namespace gatehouse::state
