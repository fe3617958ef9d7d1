// The notification bus on Redis pub/sub against a real redis-server
// (Debian's) on a unix socket, as two instances of a cluster share it.
#include "redis_server.hpp"
#include "state/notification_bus.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace gatehouse;

#ifdef GATEHOUSE_REDIS_SERVER

using gatehouse::test::RedisServer;

namespace {

// What one bus's listener heard, waited for with a deadline.
class Heard {
public:
    state::NotificationBus::Listener listener() {
        return [this](const state::Change& change) {
            std::lock_guard lock(mutex_);
            changes_.push_back(change);
            arrived_.notify_all();
        };
    }

    std::vector<state::Change> wait_for(std::size_t count,
                                        std::chrono::milliseconds patience = std::chrono::seconds(5)) {
        std::unique_lock lock(mutex_);
        arrived_.wait_for(lock, patience, [&] { return changes_.size() >= count; });
        return changes_;
    }

private:
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::vector<state::Change> changes_;
};

} // namespace

TEST_CASE("redis bus: a change published on one instance reaches the listeners of the others once", "[state][redis]") {
    RedisServer server;
    Heard on_a, on_b, on_elsewhere; // outlive the buses, whose threads call them
    auto a = state::make_redis_bus(server.settings("cluster:"));
    auto b = state::make_redis_bus(server.settings("cluster:"));
    auto elsewhere = state::make_redis_bus(server.settings("other-cluster:"));
    CHECK(a->shared());
    a->subscribe(on_a.listener());
    b->subscribe(on_b.listener());
    elsewhere->subscribe(on_elsewhere.listener());

    // The subscriber threads may still be subscribing: publish until b hears.
    std::size_t published = 0;
    for (int i = 0; i < 100 && on_b.wait_for(1, std::chrono::milliseconds(50)).empty(); ++i) {
        a->publish({state::Change::Kind::resource_updated, "test://watched"});
        ++published;
    }
    const auto heard = on_b.wait_for(1);
    REQUIRE_FALSE(heard.empty());
    CHECK(heard.front().kind == state::Change::Kind::resource_updated);
    CHECK(heard.front().uri == "test://watched");

    b->publish({state::Change::Kind::tools_list, {}});
    const auto on_a_heard = on_a.wait_for(published + 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // room for a duplicate to show up
    // a delivered its own changes itself, each once, never again from Redis.
    REQUIRE(on_a.wait_for(0).size() == published + 1);
    CHECK(on_a_heard.back().kind == state::Change::Kind::tools_list);
    CHECK(on_elsewhere.wait_for(0).empty()); // another key_prefix, another channel
}

#endif
