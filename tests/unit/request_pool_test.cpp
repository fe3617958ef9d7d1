#include "protocol/request_pool.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace gatehouse;
using namespace std::chrono_literals;

TEST_CASE("RequestPool wakes another worker for a job queued while the awake one is busy", "[pool]") {
    // Job A waits for job B: with the only awake worker inside A, B must get
    // a worker of its own, or both wait forever.
    protocol::RequestPool pool{2};
    for (int round = 0; round < 200; ++round) {
        std::promise<void> b_ran;
        auto b_future = b_ran.get_future().share();
        std::promise<bool> a_done;
        pool.submit([&, b_future] { a_done.set_value(b_future.wait_for(10s) == std::future_status::ready); });
        pool.submit([&] { b_ran.set_value(); });
        REQUIRE(a_done.get_future().get());
    }
}

TEST_CASE("RequestPool runs every job submitted from many threads, and stop finishes the queue", "[pool]") {
    std::atomic<int> ran{0};
    {
        protocol::RequestPool pool{3};
        std::vector<std::thread> submitters;
        for (int t = 0; t < 4; ++t)
            submitters.emplace_back([&] {
                for (int i = 0; i < 5000; ++i)
                    pool.submit([&] { ran.fetch_add(1, std::memory_order_relaxed); });
            });
        for (auto& s : submitters)
            s.join();
        pool.stop();
        CHECK(pool.stopped());
    }
    CHECK(ran.load() == 20000);
}

TEST_CASE("RequestPool keeps serving after idle spells", "[pool]") {
    protocol::RequestPool pool{4};
    for (int i = 0; i < 50; ++i) {
        std::promise<void> done;
        pool.submit([&] { done.set_value(); });
        REQUIRE(done.get_future().wait_for(10s) == std::future_status::ready);
        if (i % 10 == 0) std::this_thread::sleep_for(5ms); // every worker asleep again
    }
}

TEST_CASE("RequestPool starts workers only as jobs need them, never more than its size", "[pool]") {
    protocol::RequestPool pool{4};
    CHECK(pool.threads() == 0);
    std::promise<void> ran;
    pool.submit([&] { ran.set_value(); });
    ran.get_future().wait();
    CHECK(pool.threads() == 1);
    // Jobs that wait for each other need a worker each: the pool grows to
    // four, and the fifth job waits for a free one.
    std::mutex mutex;
    std::condition_variable changed;
    int inside = 0;
    bool release = false;
    std::atomic<int> done{0};
    for (int i = 0; i < 5; ++i)
        pool.submit([&] {
            std::unique_lock lock(mutex);
            ++inside;
            changed.notify_all();
            changed.wait(lock, [&] { return release; });
            ++done;
        });
    {
        std::unique_lock lock(mutex);
        REQUIRE(changed.wait_for(lock, 10s, [&] { return inside == 4; }));
    }
    CHECK(pool.threads() == 4);
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    changed.notify_all();
    pool.stop();
    CHECK(done.load() == 5);
    CHECK(pool.threads() == 0);
}

TEST_CASE("RequestPool: submit_first goes ahead of queued jobs, has_free_worker says whether one is free", "[pool]") {
    protocol::RequestPool pool{1};
    CHECK(pool.has_free_worker()); // not started yet: free
    std::promise<void> entered, release;
    auto released = release.get_future().share();
    pool.submit([&, released] {
        entered.set_value();
        released.wait();
    });
    entered.get_future().wait();
    CHECK_FALSE(pool.has_free_worker()); // the only worker is busy
    std::mutex mutex;
    std::vector<char> order;
    pool.submit([&] {
        std::lock_guard lock(mutex);
        order.push_back('a');
    });
    pool.submit_first([&] {
        std::lock_guard lock(mutex);
        order.push_back('b');
    });
    release.set_value();
    pool.stop();
    CHECK(order == std::vector<char>{'b', 'a'});
}

TEST_CASE("RequestPool: submit_next runs the job on the same worker right after the job that asked, ahead of the queue",
          "[pool]") {
    protocol::RequestPool pool{1};
    std::mutex mutex;
    std::vector<std::string> order;
    std::thread::id first_thread, next_thread;
    std::promise<void> all_done;
    const auto note = [&](const char* what) {
        std::lock_guard lock(mutex);
        order.emplace_back(what);
    };
    std::promise<void> release_first;
    auto release = release_first.get_future().share();
    pool.submit([&, release] {
        release.wait(); // the queued job below is in the queue before this one ends
        first_thread = std::this_thread::get_id();
        note("first");
        pool.submit_next([&] {
            next_thread = std::this_thread::get_id();
            note("next");
        });
    });
    pool.submit([&] {
        note("queued");
        all_done.set_value();
    });
    release_first.set_value();
    REQUIRE(all_done.get_future().wait_for(10s) == std::future_status::ready);
    CHECK(order == std::vector<std::string>{"first", "next", "queued"});
    CHECK(next_thread == first_thread);
}

TEST_CASE("RequestPool: submit_next off its workers queues as submit does; a second one in one job is queued",
          "[pool]") {
    protocol::RequestPool pool{2};
    std::promise<void> from_outside;
    pool.submit_next([&] { from_outside.set_value(); }); // this test's thread is no worker
    REQUIRE(from_outside.get_future().wait_for(10s) == std::future_status::ready);

    std::atomic<int> ran{0};
    std::promise<void> both;
    pool.submit([&] {
        for (int i = 0; i < 2; ++i)
            pool.submit_next([&] {
                if (++ran == 2) both.set_value();
            });
    });
    REQUIRE(both.get_future().wait_for(10s) == std::future_status::ready);

    // Another pool's worker is no worker of this one: its submit_next queues here.
    protocol::RequestPool other{1};
    std::promise<std::thread::id> ran_on;
    std::promise<std::thread::id> asked_on;
    other.submit([&] {
        asked_on.set_value(std::this_thread::get_id());
        pool.submit_next([&] { ran_on.set_value(std::this_thread::get_id()); });
    });
    auto ran_future = ran_on.get_future();
    REQUIRE(ran_future.wait_for(10s) == std::future_status::ready);
    CHECK(ran_future.get() != asked_on.get_future().get());
}

TEST_CASE("RequestPool: release_next hands the job a worker left itself to the queue, for a job that goes on",
          "[pool]") {
    // The job waits for the one it handed on: kept for after it, that one
    // could never run; released, another worker runs it.
    protocol::RequestPool pool{2};
    std::promise<bool> waited;
    pool.submit([&] {
        std::promise<void> next_ran;
        auto next_future = next_ran.get_future();
        pool.submit_next([&] { next_ran.set_value(); });
        pool.release_next();
        waited.set_value(next_future.wait_for(10s) == std::future_status::ready);
    });
    auto result = waited.get_future();
    REQUIRE(result.wait_for(20s) == std::future_status::ready);
    CHECK(result.get());
}
