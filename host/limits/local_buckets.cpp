#include "limits/local_buckets.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace gatehouse::limits {

namespace {

template <typename Bucket> void refill(Bucket& b, BucketStore::Clock::time_point now) {
    if (now > b.updated) {
        const double seconds = std::chrono::duration<double>(now - b.updated).count();
        b.tokens = std::min(b.burst, b.tokens + seconds * b.calls_per_second);
        b.updated = now;
    }
}

std::uint64_t ms_until_one_token(double tokens, double calls_per_second) {
    const double ms = std::ceil((1.0 - tokens) / calls_per_second * 1000.0);
    return static_cast<std::uint64_t>(std::max(1.0, ms));
}

constexpr std::size_t kMaxDraws = 2;

} // namespace

LocalBuckets::Bucket& LocalBuckets::bucket(const BucketDraw& draw, Clock::time_point now) {
    if (auto it = buckets_.find(draw.key); it != buckets_.end()) {
        refill(it->second, now);
        return it->second;
    }
    const auto& limit = *draw.limit;
    return buckets_.emplace(std::string(draw.key), Bucket{limit.burst, now, limit.calls_per_second, limit.burst})
        .first->second;
}

std::optional<BucketStore::Shortfall> LocalBuckets::take(std::span<const BucketDraw> draws, Clock::time_point now) {
    if (draws.size() > kMaxDraws) throw std::invalid_argument("LocalBuckets::take: more than two buckets for a call");
    std::lock_guard lock(mutex_);
    // A bucket that has refilled to its burst is the same as none: dropping
    // those keeps memory bounded by the callers active lately, not by every
    // principal ever seen.
    if (buckets_.size() >= sweep_at_) drop_full_buckets(now);

    // Nodes of an unordered_map stay put when others are inserted.
    std::array<Bucket*, kMaxDraws> held{};
    std::optional<Shortfall> shortfall;
    for (std::size_t i = 0; i < draws.size(); ++i) {
        held[i] = &bucket(draws[i], now);
        if (held[i]->tokens >= 1.0) continue;
        const auto wait = ms_until_one_token(held[i]->tokens, held[i]->calls_per_second);
        if (!shortfall || wait > shortfall->wait_ms) shortfall = Shortfall{i, wait};
    }
    if (shortfall) return shortfall;
    for (std::size_t i = 0; i < draws.size(); ++i)
        held[i]->tokens -= 1.0;
    return std::nullopt;
}

void LocalBuckets::drop_full_buckets(Clock::time_point now) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
        refill(it->second, now);
        if (it->second.tokens >= it->second.burst)
            it = buckets_.erase(it);
        else
            ++it;
    }
    // Sweep again once the map has doubled from what stayed, so the cost per
    // call stays constant however many callers are active.
    sweep_at_ = std::max<std::size_t>(1024, buckets_.size() * 2);
}

std::size_t LocalBuckets::size() const {
    std::lock_guard lock(mutex_);
    return buckets_.size();
}

} // namespace gatehouse::limits
