#include "transport/stop_signal.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace gatehouse;

namespace {

// Counts calls from the waiting thread and lets the test wait for them.
struct Calls {
    std::mutex mutex;
    std::condition_variable changed;
    int count = 0;

    void add() {
        std::lock_guard lock(mutex);
        ++count;
        changed.notify_all();
    }
    bool reach(int expected) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, std::chrono::seconds(10), [&] { return count >= expected; });
    }
};

} // namespace

TEST_CASE("one thread turns SIGHUP into reloads and SIGTERM into one stop", "[stop_signal]") {
    Calls reloads;
    Calls stops;
    {
        transport::StopSignal signals([&] { reloads.add(); });
        signals.on_stop([&] { stops.add(); });
        CHECK_FALSE(signals.requested());

        ::kill(::getpid(), SIGHUP);
        REQUIRE(reloads.reach(1));
        ::kill(::getpid(), SIGHUP);
        REQUIRE(reloads.reach(2));
        CHECK_FALSE(signals.requested());

        ::kill(::getpid(), SIGTERM);
        REQUIRE(stops.reach(1));
        CHECK(signals.requested());
        // A callback added after the stop runs at once.
        signals.on_stop([&] { stops.add(); });
        CHECK(stops.count == 2);
    }
    CHECK(reloads.count == 2);
}

TEST_CASE("a stop requested by the host itself runs the callbacks once", "[stop_signal]") {
    Calls stops;
    transport::StopSignal signals;
    signals.on_stop([&] { stops.add(); });
    signals.request();
    signals.request();
    CHECK(stops.count == 1);
    CHECK(signals.requested());
}

TEST_CASE("a stop is heard while a re-read waits; SIGHUPs meanwhile make one more re-read", "[stop_signal]") {
    Calls started;
    Calls stops;
    std::mutex mutex;
    std::condition_variable changed;
    int runs = 0, released = 0; // re-read n returns once released reaches n
    const auto release = [&](int upto) {
        {
            std::lock_guard lock(mutex);
            released = upto;
        }
        changed.notify_all();
    };
    {
        transport::StopSignal signals([&] {
            started.add();
            std::unique_lock lock(mutex);
            const int mine = ++runs;
            changed.wait_for(lock, std::chrono::seconds(10), [&] { return released >= mine; });
        });
        signals.on_stop([&] { stops.add(); });

        ::kill(::getpid(), SIGHUP);
        REQUIRE(started.reach(1));
        // Two more while the first runs: one more run, after it.
        ::kill(::getpid(), SIGHUP);
        ::kill(::getpid(), SIGHUP);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(started.count == 1);
        release(2);
        REQUIRE(started.reach(2));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(started.count == 2);

        // The next one waits, and a stop is heard meanwhile, not after it.
        ::kill(::getpid(), SIGHUP);
        REQUIRE(started.reach(3));
        const auto sent = std::chrono::steady_clock::now();
        ::kill(::getpid(), SIGTERM);
        REQUIRE(stops.reach(1));
        CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds(5));
        release(3);
    }
    CHECK(started.count == 3);
}
