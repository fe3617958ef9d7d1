#include "state/notification_bus.hpp"

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

void NotificationBus::on_session_message(SessionListener listener) {
    std::lock_guard lock(mutex_);
    session_listener_ = listener ? std::make_shared<const SessionListener>(std::move(listener)) : nullptr;
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
    for (const auto& listener : targets)
        listener(change);
}

void NotificationBus::deliver(const SessionMessage& message) {
    std::shared_ptr<const SessionListener> listener;
    {
        std::lock_guard lock(mutex_);
        listener = session_listener_;
    }
    if (listener) (*listener)(message);
}

} // namespace gatehouse::state
