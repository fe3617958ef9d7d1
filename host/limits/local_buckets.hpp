#pragma once

#include "limits/bucket_store.hpp"

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gatehouse::limits {

// The buckets of one process, under one mutex: what a single host (or hosts
// that do not share a Redis) counts with. Full buckets are dropped as they
// are found, so memory follows the callers active lately, not every
// principal ever seen.
class LocalBuckets final : public BucketStore {
public:
    std::optional<Shortfall> take(std::span<const BucketDraw> draws, Clock::time_point now) override;

    // Buckets held (tests).
    std::size_t size() const;

private:
    struct Bucket {
        double tokens;
        Clock::time_point updated;
        // Its limit, kept so a sweep can tell a full bucket without its draw.
        double calls_per_second;
        double burst;
    };
    // Lookups by the borrowed key, without a std::string per call.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
    };

    Bucket& bucket(const BucketDraw& draw, Clock::time_point now);
    void drop_full_buckets(Clock::time_point now);

    mutable std::mutex mutex_;
    std::unordered_map<std::string, Bucket, KeyHash, std::equal_to<>> buckets_;
    std::size_t sweep_at_ = 1024;
};

} // namespace gatehouse::limits
