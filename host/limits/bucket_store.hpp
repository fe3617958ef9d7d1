#pragma once

#include "config/config.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gatehouse::limits {

// One bucket a call takes a token from: its key (RateLimiter names them) and
// its limit. Both borrowed for the call of take().
struct BucketDraw {
    std::string_view key;
    const config::RateLimit* limit = nullptr;
};

// Where the token buckets of rate_limits live: in this process
// (LocalBuckets), or in a Redis every instance shares (RedisBuckets). A
// missing bucket is a full one. Thread-safe.
class BucketStore {
public:
    using Clock = std::chrono::steady_clock;

    // Why a call may not have its tokens: the bucket (index into the draws)
    // that waits longest for one, and that wait, at least 1 ms — when every
    // bucket involved has a token again.
    struct Shortfall {
        std::size_t draw;
        std::uint64_t wait_ms;
    };

    virtual ~BucketStore() = default;

    // Takes one token from every bucket in `draws` (at most two: the
    // principal's and the tool's), or from none. `now` is this process's
    // clock; a shared store reads its own, so instances' clocks need not
    // agree. Throws (state::BackendError) when it cannot decide.
    virtual std::optional<Shortfall> take(std::span<const BucketDraw> draws, Clock::time_point now) = 0;
};

} // namespace gatehouse::limits
