#include "limits/rate_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace gatehouse::limits {

namespace {

void refill(double& tokens, RateLimiter::Clock::time_point& updated, const config::RateLimit& limit,
            RateLimiter::Clock::time_point now) {
    if (now > updated) {
        const double seconds = std::chrono::duration<double>(now - updated).count();
        tokens = std::min(limit.burst, tokens + seconds * limit.calls_per_second);
        updated = now;
    }
}

std::uint64_t ms_until_one_token(double tokens, const config::RateLimit& limit) {
    const double ms = std::ceil((1.0 - tokens) / limit.calls_per_second * 1000.0);
    return static_cast<std::uint64_t>(std::max(1.0, ms));
}

} // namespace

RateLimiter::Bucket& RateLimiter::bucket(const std::string& key, const config::RateLimit& limit,
                                         Clock::time_point now) {
    auto [it, created] = buckets_.try_emplace(key, Bucket{limit.burst, now});
    if (!created) refill(it->second.tokens, it->second.updated, limit, now);
    return it->second;
}

std::optional<RateLimiter::Refused> RateLimiter::acquire(const std::string& principal, const std::string& tool,
                                                         Clock::time_point now) {
    if (!enabled()) return std::nullopt;
    std::lock_guard lock(mutex_);
    // A bucket that has refilled to its burst is the same as none: dropping
    // those keeps memory bounded by the callers active lately, not by every
    // principal ever seen.
    if (buckets_.size() >= sweep_at_) drop_full_buckets(now);

    const config::RateLimit* limits[2] = {nullptr, nullptr};
    Bucket* buckets[2] = {nullptr, nullptr};
    std::string names[2];
    if (limits_.per_principal) {
        limits[0] = &*limits_.per_principal;
        buckets[0] = &bucket(principal, *limits[0], now);
        names[0] = "rate_limits";
    }
    if (auto it = limits_.per_tool.find(tool); it != limits_.per_tool.end()) {
        limits[1] = &it->second;
        buckets[1] = &bucket(principal + '\0' + tool, *limits[1], now);
        names[1] = "rate_limits.per_tool." + tool;
    }
    std::optional<Refused> refused;
    for (int i = 0; i < 2; ++i) {
        if (!buckets[i] || buckets[i]->tokens >= 1.0) continue;
        const auto wait = ms_until_one_token(buckets[i]->tokens, *limits[i]);
        if (!refused || wait > refused->retry_after_ms)
            refused = Refused{wait, names[i], limits[i]->calls_per_second, limits[i]->burst};
    }
    if (refused) return refused;
    for (auto* b : buckets)
        if (b) b->tokens -= 1.0;
    return std::nullopt;
}

void RateLimiter::drop_full_buckets(Clock::time_point now) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
        const auto zero = it->first.find('\0');
        const config::RateLimit* limit = nullptr;
        if (zero == std::string::npos) {
            limit = limits_.per_principal ? &*limits_.per_principal : nullptr;
        } else if (auto t = limits_.per_tool.find(it->first.substr(zero + 1)); t != limits_.per_tool.end()) {
            limit = &t->second;
        }
        if (limit) refill(it->second.tokens, it->second.updated, *limit, now);
        if (!limit || it->second.tokens >= limit->burst)
            it = buckets_.erase(it);
        else
            ++it;
    }
    // Sweep again once the map has doubled from what stayed, so the cost per
    // call stays constant however many callers are active.
    sweep_at_ = std::max<std::size_t>(1024, buckets_.size() * 2);
}

std::size_t RateLimiter::buckets() const {
    std::lock_guard lock(mutex_);
    return buckets_.size();
}

} // namespace gatehouse::limits
