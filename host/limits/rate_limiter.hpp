#pragma once

#include "config/config.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gatehouse::limits {

// Token buckets for rate_limits: one per principal for every tools/call, and
// one per (principal, tool) for each tool under per_tool. A call takes a token
// from every bucket that applies, or from none. Thread-safe. Transports may
// call it directly too (an HTTP layer answering 429 with Retry-After).
class RateLimiter {
public:
    using Clock = std::chrono::steady_clock;

    explicit RateLimiter(config::RateLimits limits) : limits_(std::move(limits)) {}

    bool enabled() const { return limits_.any(); }

    struct Refused {
        std::uint64_t retry_after_ms; // when every bucket involved has a token again (at least 1)
        std::string limit;            // "rate_limits" or "rate_limits.per_tool.<tool>"
        double calls_per_second;
        double burst;
    };

    // Takes the tokens for one call of `tool` by `principal` at `now`, or says
    // when to retry. Nothing is taken when refused.
    std::optional<Refused> acquire(const std::string& principal, const std::string& tool, Clock::time_point now);

    // Buckets held (tests; full buckets are dropped as they are found).
    std::size_t buckets() const;

private:
    struct Bucket {
        double tokens;
        Clock::time_point updated;
    };
    Bucket& bucket(const std::string& key, const config::RateLimit& limit, Clock::time_point now);
    void drop_full_buckets(Clock::time_point now);

    const config::RateLimits limits_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Bucket> buckets_; // key: principal, or principal + '\0' + tool
    std::size_t sweep_at_ = 1024;
};

} // namespace gatehouse::limits
