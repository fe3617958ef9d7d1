#include "auth/principal.hpp"
#include "config/config_loader.hpp"
#include "limits/argument_bounds.hpp"
#include "limits/call_deadlines.hpp"
#include "limits/in_flight_limits.hpp"
#include "limits/local_buckets.hpp"
#include "limits/rate_limiter.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <mutex>
#include <thread>
#include <vector>

using namespace gatehouse;
using namespace std::chrono_literals;
using nlohmann::json;

TEST_CASE("argument_beyond_bounds finds a long string or key anywhere, with its pointer", "[limits]") {
    CHECK_FALSE(limits::argument_beyond_bounds(json{{"a", "12345678"}, {"b", {1, "x", nullptr}}}, {8, 100}, "t"));
    auto deep =
        limits::argument_beyond_bounds(json{{"a", {{"b~/c", json::array({"ok", "123456789"})}}}}, {8, 100}, "t");
    REQUIRE(deep);
    CHECK(deep->code == "ARGUMENT_TOO_LARGE");
    CHECK(deep->next["pointer"] == "/a/b~0~1c/1");
    CHECK(deep->next["bytes"] == 9);
    CHECK(deep->next["maxBytes"] == 8);
    CHECK_THAT(deep->message, Catch::Contains("tool 't'") && Catch::Contains("limits.max_string_bytes"));
    auto key = limits::argument_beyond_bounds(json{{std::string(100, 'k'), 1}}, {8, 100}, "t");
    REQUIRE(key);
    CHECK_THAT(key->message, Catch::StartsWith("An object key"));
    CHECK(key->message.find(std::string(40, 'k')) == std::string::npos);
    // Deep nesting is walked without recursion.
    json nested = "123456789";
    // Each level wraps the last by move; an initializer list would copy it.
    for (int i = 0; i < 100000; ++i) {
        json level = json::array();
        level.push_back(std::move(nested));
        nested = std::move(level);
    }
    CHECK(limits::argument_beyond_bounds(nested, {8, 100}, "t"));
}

TEST_CASE("argument_beyond_bounds refuses an integer above 2^63-1, with its pointer", "[limits]") {
    CHECK_FALSE(limits::argument_beyond_bounds(json::parse(R"({"n":9223372036854775807,"m":-9223372036854775808})"),
                                               {8, 100}, "t"));
    auto above =
        limits::argument_beyond_bounds(json::parse(R"({"a":[0,{"note_id":18446744073709551615}]})"), {8, 100}, "t");
    REQUIRE(above);
    CHECK(above->code == "INTEGER_OUT_OF_RANGE");
    CHECK(above->next["pointer"] == "/a/1/note_id");
    CHECK_THAT(above->message, Catch::Contains("18446744073709551615") && Catch::Contains("tool 't'"));
    CHECK(limits::argument_beyond_bounds(json::parse("9223372036854775808"), {8, 100}, "t"));
}

TEST_CASE("InFlightLimits counts per principal and in total", "[limits]") {
    limits::InFlightLimits l(3, 2);
    CHECK_FALSE(l.acquire("a"));
    CHECK_FALSE(l.acquire("a"));
    auto full = l.acquire("a");
    REQUIRE(full);
    CHECK(full->limit == "max_in_flight_per_principal");
    CHECK(full->value == 2);
    CHECK_FALSE(l.acquire("b")); // another principal still has room
    auto total = l.acquire("c");
    REQUIRE(total);
    CHECK(total->limit == "max_in_flight");
    l.release("a");
    CHECK(l.of("a") == 1);
    CHECK_FALSE(l.acquire("c"));
    CHECK(l.total() == 3);
}

TEST_CASE("RateLimiter: a bucket per principal, refilled over time, per_tool on top", "[limits]") {
    config::RateLimits cfg;
    cfg.per_principal = config::RateLimit{2, 2, {}};           // 2 per second, bursts of 2
    cfg.per_tool["slow_tool"] = config::RateLimit{0.5, 1, {}}; // one every 2 s
    limits::RateLimiter r(cfg);
    const auto t0 = limits::RateLimiter::Clock::time_point{} + 1000s;
    CHECK_FALSE(r.acquire("alice", "echo", t0));
    CHECK_FALSE(r.acquire("alice", "echo", t0));
    auto refused = r.acquire("alice", "echo", t0);
    REQUIRE(refused);
    CHECK(refused->retry_after_ms == 500);
    CHECK(refused->limit == "rate_limits");
    CHECK_FALSE(r.acquire("bob", "echo", t0)); // each principal has its own bucket
    CHECK_FALSE(r.acquire("alice", "echo", t0 + 500ms));
    CHECK(r.acquire("alice", "echo", t0 + 500ms));

    CHECK_FALSE(r.acquire("carol", "slow_tool", t0));
    auto tool = r.acquire("carol", "slow_tool", t0 + 100ms);
    REQUIRE(tool);
    CHECK(tool->limit == "rate_limits.per_tool.slow_tool");
    CHECK(tool->retry_after_ms == 1900);
    // Refused by the tool's bucket: the principal's token was not spent.
    CHECK_FALSE(r.acquire("carol", "echo", t0 + 100ms));
    CHECK_FALSE(r.acquire("carol", "slow_tool", t0 + 2000ms));
}

TEST_CASE("LocalBuckets forgets buckets that refilled", "[limits]") {
    config::RateLimits cfg;
    cfg.per_principal = config::RateLimit{10, 1, {}};
    auto buckets = std::make_shared<limits::LocalBuckets>();
    limits::RateLimiter r(cfg, buckets);
    const auto t0 = limits::RateLimiter::Clock::time_point{} + 1000s;
    for (int i = 0; i < 5000; ++i)
        r.acquire("p" + std::to_string(i), "echo", t0);
    CHECK(buckets->size() == 5000); // all empty: none may be forgotten yet
    for (int i = 0; i < 4000; ++i)
        r.acquire("q" + std::to_string(i), "echo", t0 + 10s);
    CHECK(buckets->size() < 5000); // the p buckets refilled and were dropped at a sweep
}

TEST_CASE("RateLimiter: no owner key reaches another principal's bucket for a tool", "[limits]") {
    config::RateLimits cfg;
    cfg.per_principal = config::RateLimit{0.001, 1, {}};
    cfg.per_tool["slow_tool"] = config::RateLimit{0.001, 1, {}};
    limits::RateLimiter r(cfg);
    const auto t0 = limits::RateLimiter::Clock::time_point{} + 1000s;
    const auto alice = auth::Principal{.subject = "alice", .kind = "local"}.owner_key();
    CHECK_FALSE(r.acquire(alice, "slow_tool", t0)); // empties alice's and alice's slow_tool bucket
    // Subjects spelling out the tool bucket's key, with either separator a
    // bucket key could use, are principals of their own.
    for (const std::string& subject : {std::string("alice%%slow_tool"), std::string("alice\0slow_tool", 15)}) {
        const auto owner = auth::Principal{.subject = subject, .kind = "local"}.owner_key();
        CHECK(owner != limits::RateLimiter::tool_bucket_key(alice, "slow_tool"));
        CHECK_FALSE(r.acquire(owner, "echo", t0));
    }
    CHECK(limits::RateLimiter::tool_bucket_key(alice, "slow_tool") == "alice%%slow_tool");
}

TEST_CASE("RateLimiter: the in-process buckets need no store and refuse within one call", "[limits]") {
    config::RateLimits cfg;
    cfg.per_principal = config::RateLimit{2, 2, {}};
    limits::RateLimiter r(cfg);
    const auto t0 = limits::RateLimiter::Clock::time_point{} + 1000s;
    CHECK_FALSE(r.acquire("ann", "echo", t0));
    CHECK_FALSE(r.acquire("ann", "echo", t0));
    auto refused = r.acquire("ann", "echo", t0 + 100ms);
    REQUIRE(refused);
    CHECK(refused->cause == limits::RateLimiter::Refused::Cause::over_rate);
    CHECK(refused->retry_after_ms == 400); // 0.2 tokens refilled, 0.8 to go at 2 per second
    CHECK(refused->calls_per_second == 2);
    CHECK(refused->burst == 2);
}

TEST_CASE("RateLimiter is off without rate_limits", "[limits]") {
    limits::RateLimiter r(config::RateLimits{});
    CHECK_FALSE(r.enabled());
    for (int i = 0; i < 1000; ++i)
        CHECK_FALSE(r.acquire("a", "b", limits::RateLimiter::Clock::now()));
}

TEST_CASE("CallDeadlines runs an action when due, and never one withdrawn", "[limits]") {
    limits::CallDeadlines deadlines;
    std::promise<void> ran;
    std::atomic<bool> withdrawn_ran{false};
    const auto far = deadlines.schedule(limits::CallDeadlines::Clock::now() + 1h, [&] { withdrawn_ran = true; });
    deadlines.schedule(limits::CallDeadlines::Clock::now() + 10ms, [&] { ran.set_value(); });
    REQUIRE(ran.get_future().wait_for(30s) == std::future_status::ready);
    deadlines.withdraw(far);
    CHECK(deadlines.pending() == 0);
    CHECK_FALSE(withdrawn_ran);
    deadlines.withdraw(far); // twice is harmless
}

TEST_CASE("CallDeadlines: an earlier deadline wakes the thread asleep for a later, withdrawn one", "[limits]") {
    limits::CallDeadlines deadlines;
    using Clock = limits::CallDeadlines::Clock;
    // The thread goes to sleep until the far deadline; withdrawing it does not
    // wake it, so the near deadline must.
    const auto far = deadlines.schedule(Clock::now() + 1h, [] {});
    std::this_thread::sleep_for(20ms);
    deadlines.withdraw(far);
    std::promise<void> ran;
    const auto start = Clock::now();
    deadlines.schedule(Clock::now() + 10ms, [&] { ran.set_value(); });
    REQUIRE(ran.get_future().wait_for(30s) == std::future_status::ready);
    CHECK(Clock::now() - start < 20s);
    // A later deadline than the one slept for runs on time as well.
    std::promise<void> later;
    const auto near = deadlines.schedule(Clock::now() + 50ms, [] {});
    deadlines.schedule(Clock::now() + 80ms, [&] { later.set_value(); });
    deadlines.withdraw(near);
    REQUIRE(later.get_future().wait_for(30s) == std::future_status::ready);
}

TEST_CASE("CallDeadlines: deadlines at the same instant are kept apart, and run in time order", "[limits]") {
    limits::CallDeadlines deadlines;
    using Clock = limits::CallDeadlines::Clock;
    const auto at = Clock::now() + 30ms;
    std::mutex mutex;
    std::vector<int> order;
    std::promise<void> last;
    const auto note = [&](int which) {
        std::lock_guard lock(mutex);
        order.push_back(which);
    };
    // Scheduled out of order, two of them at one instant; one of those withdrawn.
    deadlines.schedule(at + 20ms, [&] {
        note(3);
        last.set_value();
    });
    const auto twin = deadlines.schedule(at, [&] { note(0); });
    deadlines.schedule(at, [&] { note(1); });
    deadlines.schedule(at + 10ms, [&] { note(2); });
    CHECK(deadlines.pending() == 4);
    deadlines.withdraw(twin);
    CHECK(deadlines.pending() == 3);
    REQUIRE(last.get_future().wait_for(30s) == std::future_status::ready);
    std::lock_guard lock(mutex);
    CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("config: limits, plugin overrides and rate_limits", "[config][limits]") {
    auto cfg = config::load_config_text(R"(
plugins:
  - {path: echo.so, max_in_flight: 2, tool_timeout_ms: 500}
  - serial.so
limits: {max_string_bytes: 1024, max_in_flight_per_principal: 3, max_in_flight_per_plugin: 5, tool_timeout_ms: 9000}
rate_limits:
  calls_per_second: 2.5
  per_tool:
    echo: {calls_per_second: 1, burst: 3}
)",
                                        "t.yaml", "/");
    CHECK(cfg.limits.max_string_bytes == 1024);
    CHECK(cfg.limits.max_in_flight_per_principal == 3);
    CHECK(cfg.limits.max_in_flight_per_plugin == 5);
    CHECK(cfg.limits.tool_timeout_ms == 9000);
    CHECK(cfg.plugins[0].max_in_flight == 2u);
    CHECK(cfg.plugins[0].tool_timeout_ms == 500u);
    CHECK_FALSE(cfg.plugins[1].max_in_flight);
    REQUIRE(cfg.rate_limits.per_principal);
    CHECK(cfg.rate_limits.per_principal->calls_per_second == 2.5);
    CHECK(cfg.rate_limits.per_principal->burst == 2.5);
    CHECK(cfg.rate_limits.per_tool.at("echo").burst == 3);

    auto defaults = config::load_config_text("{}", "t.yaml", "/");
    CHECK(defaults.limits.max_string_bytes == 65536);
    CHECK(defaults.limits.max_in_flight_per_principal == 64);
    CHECK(defaults.limits.max_in_flight_per_plugin == 4);
    CHECK(defaults.limits.tool_timeout_ms == 120000);
    CHECK_FALSE(defaults.rate_limits.any());

    auto fails = [](const std::string& yaml) {
        try {
            config::load_config_text(yaml, "t.yaml", "/");
        } catch (const config::ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(fails("limits: {tool_timeout_ms: 0}\n"),
               Catch::Contains("t.yaml:1") && Catch::Contains("tool_timeout_ms must be between 1"));
    CHECK_THAT(fails("rate_limits: {burst: 3}\n"), Catch::Contains("rate_limits needs calls_per_second"));
    CHECK_THAT(fails("rate_limits: {calls_per_second: -1}\n"),
               Catch::Contains("calls_per_second must be a number from"));
    CHECK_THAT(fails("rate_limits: {per_tool: {echo: {calls_per_second: 1, burts: 2}}}\n"),
               Catch::Contains("unknown key 'burts' in rate_limits.per_tool.echo"));
    CHECK_THAT(fails("plugins: [{path: a.so, max_in_flight: 0}]\n"),
               Catch::Contains("max_in_flight must be between 1"));
}

TEST_CASE("argument_beyond_bounds refuses an array past max_array_items and U+0000 in a string or key", "[limits]") {
    CHECK_FALSE(limits::argument_beyond_bounds(json{{"a", json(std::vector<int>(100, 1))}}, {8, 100}, "t"));
    const auto many = limits::argument_beyond_bounds(json{{"a", {0, json(std::vector<int>(101, 1))}}}, {8, 100}, "t");
    REQUIRE(many);
    CHECK(many->code == "ARGUMENT_TOO_LARGE");
    CHECK(many->next["pointer"] == "/a/1");
    CHECK(many->next["limit"] == "max_array_items");
    CHECK(many->next["items"] == 101);
    const auto nul = limits::argument_beyond_bounds(json{{"name", std::string("a\0b", 3)}}, {8, 100}, "t");
    REQUIRE(nul);
    CHECK(nul->code == "NUL_IN_STRING");
    CHECK(nul->next["pointer"] == "/name");
    const auto key = limits::argument_beyond_bounds(json{{std::string("k\0", 2), 1}}, {8, 100}, "t");
    REQUIRE(key);
    CHECK(key->code == "NUL_IN_STRING");
}
