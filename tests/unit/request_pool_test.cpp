#include "protocol/request_pool.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
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
