#include "protocol/notification_bus.hpp"

#include <vector>

namespace gatehouse::protocol {

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

void NotificationBus::publish(const Change& change) {
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

} // namespace gatehouse::protocol
