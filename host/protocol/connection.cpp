#include "protocol/connection.hpp"

namespace gatehouse::protocol {

std::shared_ptr<InFlight> Connection::begin(const Json& id) {
    auto state = std::make_shared<InFlight>();
    std::lock_guard lock(in_flight_mutex_);
    in_flight_[id.dump()] = state;
    return state;
}

void Connection::end(const Json& id, const std::shared_ptr<InFlight>& state) {
    std::lock_guard lock(in_flight_mutex_);
    if (auto it = in_flight_.find(id.dump()); it != in_flight_.end() && it->second == state) in_flight_.erase(it);
}

void Connection::cancel(const Json& id) {
    std::lock_guard lock(in_flight_mutex_);
    if (auto it = in_flight_.find(id.dump()); it != in_flight_.end()) it->second->cancelled = true;
}

void Connection::cancel_all() {
    std::lock_guard lock(in_flight_mutex_);
    for (auto& [_, state] : in_flight_)
        state->cancelled = true;
}

} // namespace gatehouse::protocol
