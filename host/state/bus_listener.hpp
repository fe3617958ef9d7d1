#pragma once

#include "state/notification_bus.hpp"

#include <cstdint>
#include <memory>
#include <utility>

namespace gatehouse::state {

// One listener on a bus, owned: taken off the bus when reset or destroyed.
// Whatever holds it (a 2025-11-25 connection) cannot leave its listener
// behind, however it ends. A bus gone first is nothing to take it off.
class BusListener {
public:
    BusListener() = default;
    BusListener(const std::shared_ptr<NotificationBus>& bus, NotificationBus::Listener listener)
        : bus_(bus), token_(bus->subscribe(std::move(listener))) {}
    BusListener(BusListener&& other) noexcept : bus_(std::move(other.bus_)), token_(std::exchange(other.token_, 0)) {}
    BusListener& operator=(BusListener&& other) noexcept {
        if (this != &other) {
            reset();
            bus_ = std::move(other.bus_);
            token_ = std::exchange(other.token_, 0);
        }
        return *this;
    }
    BusListener(const BusListener&) = delete;
    BusListener& operator=(const BusListener&) = delete;
    ~BusListener() { reset(); }

    void reset() {
        if (token_ == 0) return;
        if (auto bus = bus_.lock()) bus->unsubscribe(token_);
        token_ = 0;
        bus_.reset();
    }
    bool listening() const { return token_ != 0; }

private:
    std::weak_ptr<NotificationBus> bus_;
    std::uint64_t token_ = 0; // the bus's tokens start at 1
};

} // namespace gatehouse::state
