#include "transport/inline_call_watch.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

using gatehouse::transport::InlineCallWatch;
using namespace std::chrono_literals;

namespace {

// Waits (up to 5 s) until `count` reaches `want`.
bool reaches(const std::atomic<int>& count, int want) {
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (count.load() < want && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(1ms);
    return count.load() >= want;
}

} // namespace

TEST_CASE("a call that returns within the tick keeps the reading", "[inline_call_watch]") {
    std::atomic<int> taken{0};
    InlineCallWatch watch(std::chrono::milliseconds(500), [&] { ++taken; });
    REQUIRE(watch.ready());
    for (int i = 0; i < 1000; ++i) {
        const auto token = watch.begin();
        CHECK(watch.end(token));
    }
    watch.stop();
    CHECK(taken.load() == 0);
}

TEST_CASE("a call that outlasts the tick loses the reading, once", "[inline_call_watch]") {
    std::atomic<int> taken{0};
    InlineCallWatch watch(std::chrono::milliseconds(2), [&] { ++taken; });
    REQUIRE(watch.ready());
    const auto token = watch.begin();
    REQUIRE(reaches(taken, 1));
    std::this_thread::sleep_for(20ms); // more ticks pass: still one take-over
    CHECK(taken.load() == 1);
    CHECK_FALSE(watch.end(token)); // its thread must not read on
    // The next reader's calls are watched as well.
    const auto next = watch.begin();
    CHECK(watch.end(next));
    CHECK(taken.load() == 1);
}

TEST_CASE("an idle watch sleeps, and the next call wakes it", "[inline_call_watch]") {
    std::atomic<int> taken{0};
    InlineCallWatch watch(std::chrono::milliseconds(2), [&] { ++taken; });
    REQUIRE(watch.ready());
    CHECK(watch.end(watch.begin()));
    std::this_thread::sleep_for(50ms); // many ticks with nothing begun: the watch parks
    const auto token = watch.begin();
    REQUIRE(reaches(taken, 1));
    CHECK_FALSE(watch.end(token));
}

TEST_CASE("after stop nothing is taken over", "[inline_call_watch]") {
    std::atomic<int> taken{0};
    InlineCallWatch watch(std::chrono::milliseconds(1), [&] { ++taken; });
    REQUIRE(watch.ready());
    watch.stop();
    CHECK_FALSE(watch.ready()); // the reader runs no call itself any more
    const auto token = watch.begin();
    std::this_thread::sleep_for(20ms);
    CHECK(watch.end(token));
    CHECK(taken.load() == 0);
}
