#pragma once

#include "config/config.hpp"
#include "limits/bucket_store.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gatehouse::limits {

// Token buckets for rate_limits: one per principal for every tools/call, and
// one per (principal, tool) for each tool under per_tool. A call takes a token
// from every bucket that applies, or from none. The buckets live in a
// BucketStore: this process's own unless the host passes a shared one.
// Thread-safe. Transports may call it directly too (an HTTP layer answering
// 429 with Retry-After).
class RateLimiter {
public:
    using Clock = BucketStore::Clock;

    // Without a store, the buckets are this process's (LocalBuckets).
    explicit RateLimiter(config::RateLimits limits, std::shared_ptr<BucketStore> store = nullptr);

    bool enabled() const { return limits_.any(); }

    struct Refused {
        // over_rate: a bucket is out of tokens. state_unavailable: the store
        // could not say (a shared one unreachable); the call is refused all
        // the same, never let through, and the store's error is logged.
        enum class Cause { over_rate, state_unavailable };
        Cause cause = Cause::over_rate;
        // over_rate only:
        std::uint64_t retry_after_ms = 0; // when every bucket involved has a token again (at least 1)
        std::string limit;                // "rate_limits" or "rate_limits.per_tool.<tool>"
        double calls_per_second = 0;
        double burst = 0;
    };

    // Takes the tokens for one call of `tool` by `principal` (its owner key)
    // at `now`, or says why not. Nothing is taken when refused.
    std::optional<Refused> acquire(const std::string& principal, const std::string& tool, Clock::time_point now);

    // The key of a principal's bucket for one tool. '%' in an owner key
    // always starts an escape (%25, %3A: auth::Principal::owner_key), so
    // "%%" never occurs in one and no principal's own bucket, nor another
    // principal's tool bucket, can have this key.
    static std::string tool_bucket_key(const std::string& principal, const std::string& tool) {
        return principal + "%%" + tool;
    }

private:
    Refused unavailable(const std::exception& error);
    void answered_again();

    const config::RateLimits limits_;
    const std::shared_ptr<BucketStore> store_;
    // A store that is down fails every call: its error is logged at most
    // once a second, and its return once.
    std::atomic<bool> failing_{false};
    std::mutex failure_mutex_;
    Clock::time_point next_failure_log_{};
    std::uint64_t failures_unlogged_ = 0;
};

} // namespace gatehouse::limits
