#pragma once

#include "config/config.hpp"
#include "limits/bucket_store.hpp"

#include <memory>

namespace gatehouse::state {
class RedisClient;
}

namespace gatehouse::limits {

// Buckets every instance on one Redis shares (session.backend: redis), so
// three hosts behind a load balancer grant a principal what one would. Each
// call is one round trip: a Lua script (EVALSHA; EVAL when Redis no longer
// holds it) that refills, checks and takes every bucket of the call at once,
// on Redis's clock (TIME). Bucket `<key>` is the hash
// `<session.redis.key_prefix>rate:<key>` {tokens, updated (µs)}, expiring
// once it would have refilled to its burst. Connects and loads the script
// at once, so a Redis that is not there stops the start (BackendError);
// later failures are take()'s BackendError.
std::shared_ptr<BucketStore> make_redis_buckets(const config::RedisSettings& settings);
// The same on a client the host shares with its other Redis parts.
std::shared_ptr<BucketStore> make_redis_buckets(std::shared_ptr<state::RedisClient> redis);

} // namespace gatehouse::limits
