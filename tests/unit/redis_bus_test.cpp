// The notification bus on Redis pub/sub against a real redis-server: what
// one instance publishes reaches the listeners of the others (and its own,
// once), session messages reach the other instances only, and a bus that
// lost Redis says so, comes back by itself, and tells its listeners every
// list may have changed meanwhile.
#include "redis_server.hpp"
#include "state/notification_bus.hpp"
#include "state/redis_client.hpp"
#include "state/state_backend.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace gatehouse;

#ifdef GATEHOUSE_REDIS_SERVER

using gatehouse::test::RedisServer;

namespace {

struct Heard {
    std::mutex mutex;
    std::vector<state::Change> changes;
    std::vector<state::SessionMessage> messages;

    std::size_t count() {
        std::lock_guard lock(mutex);
        return changes.size();
    }
    std::size_t message_count() {
        std::lock_guard lock(mutex);
        return messages.size();
    }
};

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds within = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return condition();
}

void listen(state::NotificationBus& bus, Heard& heard) {
    bus.subscribe([&heard](const state::Change& change) {
        std::lock_guard lock(heard.mutex);
        heard.changes.push_back(change);
    });
    bus.on_session_message([&heard](const state::SessionMessage& message) {
        std::lock_guard lock(heard.mutex);
        heard.messages.push_back(message);
    });
}

} // namespace

TEST_CASE("redis bus: a change published on one instance reaches every instance once", "[state][redis][bus]") {
    RedisServer server;
    Heard on_a, on_b, on_other; // before the buses: their threads deliver here until they go
    auto a = state::make_redis_bus(server.settings("cluster:"));
    auto b = state::make_redis_bus(server.settings("cluster:"));
    auto other_cluster = state::make_redis_bus(server.settings("other:"));
    CHECK(a->shared());
    CHECK_FALSE(a->trouble());
    listen(*a, on_a);
    listen(*b, on_b);
    listen(*other_cluster, on_other);

    a->publish({state::Change::Kind::resource_updated, "test://watched"});
    REQUIRE(eventually([&] { return on_b.count() == 1; }));
    {
        std::lock_guard lock(on_b.mutex);
        CHECK(on_b.changes[0].kind == state::Change::Kind::resource_updated);
        CHECK(on_b.changes[0].uri == "test://watched");
    }
    b->publish({state::Change::Kind::tools_list, {}});
    REQUIRE(eventually([&] { return on_a.count() == 2; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(on_a.count() == 2); // its own change once (delivered at publish), not again from Redis
    CHECK(on_b.count() == 2);
    CHECK(on_other.count() == 0); // another key prefix is another cluster
}

TEST_CASE("redis bus: a session message reaches the other instances, not the one relaying it", "[state][redis][bus]") {
    RedisServer server;
    Heard on_a, on_b;
    auto a = state::make_redis_bus(server.settings());
    auto b = state::make_redis_bus(server.settings());
    listen(*a, on_a);
    listen(*b, on_b);
    a->relay({"session-1", R"({"closed":true})"});
    REQUIRE(eventually([&] { return on_b.message_count() == 1; }));
    {
        std::lock_guard lock(on_b.mutex);
        CHECK(on_b.messages[0].session == "session-1");
        CHECK(on_b.messages[0].body == R"({"closed":true})");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(on_a.message_count() == 0);
    // A listener taken away is never called again.
    b->on_session_message({});
    a->relay({"session-2", "{}"});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(on_b.message_count() == 1);
}

TEST_CASE("redis bus: Redis gone and back: trouble is reported, the bus resubscribes and says every list changed",
          "[state][redis][bus]") {
    RedisServer server;
    Heard on_b;
    auto a = state::make_redis_bus(server.settings());
    auto b = state::make_redis_bus(server.settings());
    listen(*b, on_b);
    server.stop();
    REQUIRE(eventually([&] { return b->trouble().has_value(); }));
    CHECK(b->trouble()->find("reconnecting") != std::string::npos);
    a->publish({state::Change::Kind::tools_list, {}}); // lost for b: nobody can carry it
    server.start();
    REQUIRE(eventually([&] { return !b->trouble(); }, std::chrono::seconds(10)));
    // What b may have missed: every list, so its subscribers re-list.
    REQUIRE(eventually([&] { return on_b.count() >= 3; }));
    {
        std::lock_guard lock(on_b.mutex);
        std::set<state::Change::Kind> kinds;
        for (const auto& c : on_b.changes)
            kinds.insert(c.kind);
        CHECK(kinds.count(state::Change::Kind::tools_list));
        CHECK(kinds.count(state::Change::Kind::prompts_list));
        CHECK(kinds.count(state::Change::Kind::resources_list));
    }
    // And carries changes again.
    const auto before = on_b.count();
    REQUIRE(eventually([&] {
        a->publish({state::Change::Kind::prompts_list, {}});
        return on_b.count() > before;
    }));
}

TEST_CASE("redis bus: a message of the wrong shape, or a listener that throws, costs that message only",
          "[state][redis][bus]") {
    RedisServer server;
    Heard heard;
    auto bus = state::make_redis_bus(server.settings("cluster:"));
    listen(*bus, heard);
    // Whoever may PUBLISH on the channel: members of every other type where
    // text is expected. Each used to throw out of the listener thread and
    // end the process (and every instance with it).
    state::RedisClient hostile(server.settings("cluster:"));
    for (const char* payload : {R"({"o":1})", R"({"k":["tools"]})", R"({"k":"resource","u":5})",
                                R"({"k":"resource","u":"x","d":{}})", R"({"s":"x","m":{}})", R"([1,2])", "not json"})
        hostile.command({"PUBLISH", "cluster:bus", payload});
    hostile.command({"PUBLISH", "cluster:bus", R"({"o":"elsewhere","k":"resource","u":"test://after"})"});
    REQUIRE(eventually([&] { return heard.count() == 1; }));
    {
        std::lock_guard lock(heard.mutex);
        CHECK(heard.changes[0].uri == "test://after");
    }
    // A listener that throws costs itself the change: the others hear it, and the next.
    bus->subscribe([](const state::Change&) { throw std::runtime_error("a listener's own fault"); });
    hostile.command({"PUBLISH", "cluster:bus", R"({"o":"elsewhere","k":"tools"})"});
    hostile.command({"PUBLISH", "cluster:bus", R"({"o":"elsewhere","k":"prompts"})"});
    CHECK(eventually([&] { return heard.count() == 3; }));
    CHECK(bus->shared());
}

TEST_CASE("redis bus: a Redis that is not there stops the start", "[state][redis][bus]") {
    config::RedisSettings settings;
    settings.url = "unix:///nonexistent/redis.sock";
    settings.connect_timeout_ms = 200;
    CHECK_THROWS_AS(state::make_redis_bus(settings), state::BackendError);
}

#endif
