#include "limits/in_flight_limits.hpp"

namespace gatehouse::limits {

std::optional<InFlightLimits::Full> InFlightLimits::acquire(const std::string& principal) {
    std::lock_guard lock(mutex_);
    if (total_ >= max_total_)
        return Full{"max_in_flight", max_total_,
                    "The server has " + std::to_string(max_total_) +
                        " requests in flight, its limit (limits.max_in_flight); retry when one of yours has been "
                        "answered."};
    auto it = per_principal_.find(principal);
    if (it != per_principal_.end() && it->second >= max_per_principal_)
        return Full{"max_in_flight_per_principal", max_per_principal_,
                    "You have " + std::to_string(max_per_principal_) +
                        " requests in flight, the limit per caller (limits.max_in_flight_per_principal); retry when "
                        "one of them has been answered."};
    ++total_;
    ++per_principal_[principal];
    return std::nullopt;
}

void InFlightLimits::release(const std::string& principal) {
    std::lock_guard lock(mutex_);
    if (total_ > 0) --total_;
    auto it = per_principal_.find(principal);
    if (it == per_principal_.end()) return;
    if (--it->second == 0) per_principal_.erase(it); // the map holds only callers with calls in flight
}

unsigned InFlightLimits::total() const {
    std::lock_guard lock(mutex_);
    return total_;
}

unsigned InFlightLimits::of(const std::string& principal) const {
    std::lock_guard lock(mutex_);
    auto it = per_principal_.find(principal);
    return it == per_principal_.end() ? 0 : it->second;
}

} // namespace gatehouse::limits
