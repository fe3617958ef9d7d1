#include "limits/rate_limiter.hpp"

#include "limits/local_buckets.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::limits {

RateLimiter::RateLimiter(config::RateLimits limits, std::shared_ptr<BucketStore> store)
    : limits_(std::move(limits)), store_(store ? std::move(store) : std::make_shared<LocalBuckets>()) {}

std::optional<RateLimiter::Refused> RateLimiter::acquire(const std::string& principal, const std::string& tool,
                                                         Clock::time_point now) {
    if (!enabled()) return std::nullopt;
    BucketDraw draws[2];
    std::size_t count = 0;
    if (limits_.per_principal) draws[count++] = {principal, &*limits_.per_principal};
    std::string tool_key;
    if (auto it = limits_.per_tool.find(tool); it != limits_.per_tool.end()) {
        tool_key = tool_bucket_key(principal, tool);
        draws[count++] = {tool_key, &it->second};
    }
    std::optional<BucketStore::Shortfall> shortfall;
    try {
        shortfall = store_->take({draws, count}, now);
    } catch (const std::exception& e) {
        return unavailable(e);
    }
    if (failing_.load(std::memory_order_relaxed)) answered_again();
    if (!shortfall) return std::nullopt;
    const BucketDraw& empty = draws[shortfall->draw];
    Refused refused;
    refused.retry_after_ms = shortfall->wait_ms;
    const bool tool_bucket = !tool_key.empty() && shortfall->draw == count - 1; // the tool's draw comes last
    refused.limit = tool_bucket ? "rate_limits.per_tool." + tool : "rate_limits";
    refused.calls_per_second = empty.limit->calls_per_second;
    refused.burst = empty.limit->burst;
    return refused;
}

RateLimiter::Refused RateLimiter::unavailable(const std::exception& error) {
    {
        std::lock_guard lock(failure_mutex_);
        const auto now = Clock::now();
        if (now >= next_failure_log_) {
            if (failures_unlogged_ > 0)
                spdlog::error("rate_limits: the buckets cannot be read, so tool calls are refused ({} more since "
                              "the last line): {}",
                              failures_unlogged_, error.what());
            else
                spdlog::error("rate_limits: the buckets cannot be read, so tool calls are refused: {}", error.what());
            next_failure_log_ = now + std::chrono::seconds(1);
            failures_unlogged_ = 0;
        } else {
            ++failures_unlogged_;
        }
        failing_.store(true, std::memory_order_relaxed);
    }
    Refused refused;
    refused.cause = Refused::Cause::state_unavailable;
    return refused;
}

void RateLimiter::answered_again() {
    std::lock_guard lock(failure_mutex_);
    if (!failing_.exchange(false, std::memory_order_relaxed)) return;
    spdlog::info("rate_limits: the buckets answer again");
    next_failure_log_ = {};
    failures_unlogged_ = 0;
}

} // namespace gatehouse::limits
