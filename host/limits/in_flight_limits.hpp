#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gatehouse::limits {

// Requests accepted and not yet answered: across all callers
// (limits.max_in_flight) and per principal (limits.max_in_flight_per_principal),
// so one busy caller cannot take every place. Thread-safe.
class InFlightLimits {
public:
    InFlightLimits(unsigned max_total, unsigned max_per_principal)
        : max_total_(max_total), max_per_principal_(max_per_principal) {}

    // Which limit refused one more request, for the message and the error data.
    struct Full {
        std::string limit; // the YAML key under limits:
        unsigned value;
        std::string message; // a sentence for the caller
    };

    // Takes a place for `principal`, or says which limit is full. Every
    // successful acquire is paired with exactly one release.
    std::optional<Full> acquire(const std::string& principal);
    void release(const std::string& principal);

    unsigned total() const;
    unsigned of(const std::string& principal) const;

private:
    const unsigned max_total_;
    const unsigned max_per_principal_;
    mutable std::mutex mutex_;
    unsigned total_ = 0;
    std::unordered_map<std::string, unsigned> per_principal_; // only principals with calls in flight
};

} // namespace gatehouse::limits
