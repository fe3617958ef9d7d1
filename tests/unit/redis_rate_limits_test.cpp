// rate_limits counted in Redis (limits::make_redis_buckets) against a real
// redis-server: several limiters on one Redis stand for several instances
// of a host behind one address.
#include "limits/rate_limiter.hpp"
#include "limits/redis_buckets.hpp"
#include "redis_server.hpp"
#include "state/redis_client.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace gatehouse;

#ifdef GATEHOUSE_REDIS_SERVER

using gatehouse::test::RedisServer;

namespace {

config::RateLimits principal_limit(double calls_per_second, double burst) {
    config::RateLimits limits;
    limits.per_principal = config::RateLimit{calls_per_second, burst, {}};
    return limits;
}

// One instance's limiter: its own connections to the shared Redis.
limits::RateLimiter instance(const RedisServer& server, const config::RateLimits& limits) {
    return limits::RateLimiter(limits, limits::make_redis_buckets(server.settings()));
}

std::optional<limits::RateLimiter::Refused> call(limits::RateLimiter& limiter, const std::string& principal,
                                                 const std::string& tool = "echo") {
    return limiter.acquire(principal, tool, limits::RateLimiter::Clock::now());
}

long long pttl(state::RedisClient& redis, const std::string& key) {
    return redis.command({"PTTL", key}).integer;
}

} // namespace

TEST_CASE("shared rate limits: two instances on one Redis draw from one bucket per principal", "[limits][redis]") {
    RedisServer server;
    const auto limits = principal_limit(0.001, 3); // three calls, then one in 1000 s
    auto a = instance(server, limits);
    auto b = instance(server, limits);
    CHECK_FALSE(call(a, "alice"));
    CHECK_FALSE(call(b, "alice"));
    CHECK_FALSE(call(a, "alice"));
    // Each instance has granted fewer than the burst; together they have spent it.
    for (auto* limiter : {&a, &b}) {
        auto refused = call(*limiter, "alice");
        REQUIRE(refused);
        CHECK(refused->cause == limits::RateLimiter::Refused::Cause::over_rate);
        CHECK(refused->limit == "rate_limits");
        CHECK(refused->retry_after_ms > 990'000);
        CHECK(refused->retry_after_ms <= 1'000'000);
        CHECK(refused->burst == 3);
    }
    CHECK_FALSE(call(b, "bob")); // each principal has its own bucket
}

TEST_CASE("shared rate limits: what instances grant together stays within burst plus rate times the time elapsed",
          "[limits][redis]") {
    RedisServer server;
    const double rate = 40, burst = 5;
    const auto limits = principal_limit(rate, burst);
    auto a = instance(server, limits);
    auto b = instance(server, limits);
    std::atomic<int> granted{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([&, t] {
            auto& limiter = t % 2 ? a : b;
            for (int i = 0; i < 150; ++i)
                if (!call(limiter, "alice")) ++granted;
        });
    for (auto& t : callers)
        t.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("granted " << granted << " of 600 in " << elapsed << " s");
    CHECK(granted >= burst);
    // Redis's clock ran at most `elapsed` between the first call and the last.
    CHECK(granted <= burst + rate * elapsed);
    CHECK(granted < 600); // the rest were refused
}

TEST_CASE("shared rate limits: the tool's bucket on top, all or nothing, retry when every bucket has a token",
          "[limits][redis]") {
    RedisServer server;
    config::RateLimits limits = principal_limit(0.001, 2);
    limits.per_tool["slow_tool"] = config::RateLimit{0.001, 1, {}};
    auto a = instance(server, limits);
    auto b = instance(server, limits);
    CHECK_FALSE(call(a, "carol", "slow_tool"));
    auto tool = call(b, "carol", "slow_tool");
    REQUIRE(tool);
    CHECK(tool->limit == "rate_limits.per_tool.slow_tool");
    // Refused by the tool's bucket: the principal's token was not spent.
    CHECK_FALSE(call(b, "carol", "echo"));
    auto principal = call(a, "carol", "echo");
    REQUIRE(principal);
    CHECK(principal->limit == "rate_limits");

    // Both buckets empty: the answer is the later of the two refills.
    config::RateLimits two = principal_limit(1, 1);            // a token a second
    two.per_tool["slow_tool"] = config::RateLimit{0.5, 1, {}}; // one every 2 s
    auto c = instance(server, two);
    auto d = instance(server, two);
    CHECK_FALSE(call(c, "dave", "slow_tool"));
    auto both = call(d, "dave", "slow_tool");
    REQUIRE(both);
    CHECK(both->limit == "rate_limits.per_tool.slow_tool");
    CHECK(both->retry_after_ms > 1000);
    CHECK(both->retry_after_ms <= 2000);
}

TEST_CASE("shared rate limits: buckets live under the key prefix and expire once they would be full again",
          "[limits][redis]") {
    RedisServer server;
    state::RedisClient redis(server.settings());
    config::RateLimits limits = principal_limit(0.001, 3);
    limits.per_tool["slow_tool"] = config::RateLimit{0.001, 1, {}};
    auto a = instance(server, limits);
    CHECK_FALSE(call(a, "erin", "slow_tool"));
    // Two tokens left of three, refilled in 1000 s: one refill to go.
    const auto principal_ttl = pttl(redis, "test:rate:erin");
    CHECK(principal_ttl > 990'000);
    CHECK(principal_ttl <= 1'000'001);
    const auto tool_ttl = pttl(redis, "test:rate:erin%%slow_tool");
    CHECK(tool_ttl > 990'000);
    CHECK(tool_ttl <= 1'000'001);
    CHECK(redis.command({"HGET", "test:rate:erin", "tokens"}).text == "2");

    // A fast bucket vanishes by itself, and is then full.
    auto fast = instance(server, principal_limit(10, 1));
    CHECK_FALSE(call(fast, "frank"));
    CHECK(pttl(redis, "test:rate:frank") <= 101); // empty, full again in 100 ms
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        gone = redis.command({"EXISTS", "test:rate:frank"}).integer == 0;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(gone);
    CHECK_FALSE(call(fast, "frank"));
}

TEST_CASE("shared rate limits: a Redis that forgot the script is sent it again", "[limits][redis]") {
    RedisServer server;
    state::RedisClient redis(server.settings());
    auto a = instance(server, principal_limit(0.001, 2));
    CHECK_FALSE(call(a, "gina"));
    redis.command({"SCRIPT", "FLUSH"});
    CHECK_FALSE(call(a, "gina")); // EVAL in place of the unknown EVALSHA
    CHECK(call(a, "gina"));       // and the bucket is the same one
}

TEST_CASE("shared rate limits: Redis down refuses every call as state unavailable; back, it grants again",
          "[limits][redis]") {
    RedisServer server;
    auto a = instance(server, principal_limit(0.001, 5));
    CHECK_FALSE(call(a, "hank"));
    server.stop();
    for (int i = 0; i < 3; ++i) {
        auto refused = call(a, "hank");
        REQUIRE(refused);
        CHECK(refused->cause == limits::RateLimiter::Refused::Cause::state_unavailable);
    }
    server.start(); // an empty Redis, without the script
    bool granted = false;
    for (int i = 0; i < 100 && !granted; ++i) {
        auto refused = call(a, "hank");
        if (refused) {
            CHECK(refused->cause == limits::RateLimiter::Refused::Cause::state_unavailable);
            std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the client's pause after failures
        }
        granted = !refused;
    }
    CHECK(granted);
}

TEST_CASE("shared rate limits: a Redis that is not there stops the start", "[limits][redis]") {
    RedisServer server;
    const auto settings = server.settings();
    server.stop();
    CHECK_THROWS_AS(limits::make_redis_buckets(settings), state::BackendError);
}

#endif
