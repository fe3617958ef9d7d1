// The Redis state backend against a real redis-server (Debian's), started
// here on a unix socket in a fresh folder.
#include "config/config_loader.hpp"
#include "redis_server.hpp"
#include "serve/host.hpp"
#include "session/session_table.hpp"
#include "state/redis_client.hpp"
#include "state/state_backend.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

using namespace gatehouse;

#ifdef GATEHOUSE_REDIS_SERVER

using gatehouse::test::RedisServer;

TEST_CASE("redis: get, put, erase, expiry and a prefix of its own", "[state][redis]") {
    RedisServer server;
    auto a = state::make_redis_backend(server.settings("a:"));
    auto b = state::make_redis_backend(server.settings("b:"));
    CHECK(std::string(a->name()) == "redis");
    CHECK_FALSE(a->get("k"));
    a->put("k", std::string("v\0binary", 8), std::chrono::milliseconds(0));
    CHECK(a->get("k") == std::string("v\0binary", 8));
    CHECK_FALSE(b->get("k")); // another prefix, another namespace
    CHECK(a->erase("k"));
    CHECK_FALSE(a->erase("k"));
    CHECK(a->add("first", "1", std::chrono::milliseconds(0)));
    CHECK_FALSE(a->add("first", "2", std::chrono::milliseconds(0)));
    CHECK(a->get("first") == "1");
    CHECK(b->add("first", "b", std::chrono::milliseconds(60))); // another prefix
    a->put("brief", "x", std::chrono::milliseconds(60));
    CHECK(a->get("brief") == "x");
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CHECK_FALSE(a->get("brief")); // Redis's own expiry
}

TEST_CASE("redis: take answers a live value once, across backends and threads", "[state][redis]") {
    RedisServer server;
    auto one = state::make_redis_backend(server.settings());
    auto two = state::make_redis_backend(server.settings());
    for (int round = 0; round < 20; ++round) {
        one->put("ticket", "code", std::chrono::milliseconds(0));
        std::atomic<int> winners{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 8; ++t)
            threads.emplace_back([&, t] {
                auto& backend = t % 2 ? *one : *two;
                if (backend.take("ticket")) ++winners;
            });
        for (auto& t : threads)
            t.join();
        CHECK(winners == 1);
    }
}

TEST_CASE("redis: replace writes only over the value it expects, atomically across instances", "[state][redis]") {
    RedisServer server;
    auto a = state::make_redis_backend(server.settings());
    auto b = state::make_redis_backend(server.settings());
    CHECK_FALSE(a->replace("k", "", "v1", std::chrono::milliseconds(0)));
    a->put("k", "v1", std::chrono::milliseconds(0));
    CHECK_FALSE(b->replace("k", "v0", "v2", std::chrono::milliseconds(0)));
    CHECK(b->replace("k", "v1", "v2", std::chrono::milliseconds(60000)));
    CHECK(a->get("k") == std::optional<std::string>("v2"));
    // Each thread adds one by read and replace, retrying when another came
    // between: no increment is lost.
    a->put("counter", "0", std::chrono::milliseconds(0));
    state::StateBackend* backends[] = {a.get(), b.get()};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i)
                for (;;) {
                    const auto now = backends[t % 2]->get("counter");
                    if (backends[t % 2]->replace("counter", *now, std::to_string(std::stoi(*now) + 1),
                                                 std::chrono::milliseconds(0)))
                        break;
                }
        });
    for (auto& t : threads)
        t.join();
    CHECK(a->get("counter") == std::optional<std::string>("200"));
}

// Two instances change one gate session at once (rules accepted on one,
// others on the other): every change is kept.
TEST_CASE("redis: concurrent session updates from two instances lose nothing", "[state][redis]") {
    RedisServer server;
    session::SessionTable one(state::make_redis_backend(server.settings()), std::chrono::seconds(600));
    session::SessionTable two(state::make_redis_backend(server.settings()), std::chrono::seconds(600));
    session::SessionDraft draft;
    draft.principal = "alice";
    draft.store = "shop";
    draft.user = "ann";
    draft.topic = "orders";
    draft.folder = "/tmp/x";
    const auto opened = one.open(std::move(draft));
    session::SessionTable* tables[] = {&one, &two};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10; ++i) {
                const std::string tool = "tool-" + std::to_string(t) + "-" + std::to_string(i);
                REQUIRE(tables[t % 2]->update(opened.handle, "alice", [&](session::Session& s) {
                    if (!s.accepted(tool)) s.accepted_rules.push_back(tool);
                }));
            }
        });
    for (auto& t : threads)
        t.join();
    const auto seen = two.find(opened.handle, "alice");
    REQUIRE(seen);
    CHECK(seen->accepted_rules.size() == 40);
}

TEST_CASE("redis: scan lists live keys under a prefix, in order, globs taken literally", "[state][redis]") {
    RedisServer server;
    auto backend = state::make_redis_backend(server.settings("p*[x]:"));
    auto other = state::make_redis_backend(server.settings("pQ"));
    backend->put("family/b", "2", std::chrono::milliseconds(0));
    backend->put("family/a", "1", std::chrono::milliseconds(0));
    backend->put("session/z", "3", std::chrono::milliseconds(0));
    // "pQx:family/c" matches p*[x]:family/* as a glob, not as text.
    other->put("x:family/c", "4", std::chrono::milliseconds(0));
    const auto listed = backend->scan("family/");
    REQUIRE(listed.size() == 2);
    CHECK(listed[0] == std::pair<std::string, std::string>("family/a", "1"));
    CHECK(listed[1] == std::pair<std::string, std::string>("family/b", "2"));
}

TEST_CASE("redis: down is a BackendError naming where, and the backend serves again once it is back",
          "[state][redis]") {
    RedisServer server;
    auto backend = state::make_redis_backend(server.settings());
    backend->put("k", "v", std::chrono::milliseconds(0));
    server.stop();
    try {
        backend->get("k");
        FAIL("no error with Redis down");
    } catch (const state::BackendError& e) {
        CHECK_THAT(e.what(), Catch::Contains(server.socket().string()));
    }
    server.start(); // an empty Redis: nothing was saved
    bool served = false;
    for (int i = 0; i < 100 && !served; ++i) {
        try {
            backend->put("k", "again", std::chrono::milliseconds(0));
            served = true;
        } catch (const state::BackendError&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the pause after a failure
        }
    }
    REQUIRE(served);
    CHECK(backend->get("k") == "again");
}

TEST_CASE("redis: AUTH from a password file, never in a message; a wrong one stops the start", "[state][redis]") {
    RedisServer server("s3cret-pass");
    auto settings = server.settings();
    settings.password_file = server.dir() / "password";
    std::ofstream(settings.password_file) << "s3cret-pass\n";
    auto backend = state::make_redis_backend(settings);
    backend->put("k", "v", std::chrono::milliseconds(0));
    CHECK(backend->get("k") == "v");

    std::ofstream(settings.password_file, std::ios::trunc) << "wrong-pass\n";
    try {
        state::make_redis_backend(settings);
        FAIL("a wrong password was accepted");
    } catch (const state::BackendError& e) {
        CHECK_THAT(e.what(), Catch::Contains("AUTH refused"));
        CHECK_THAT(e.what(), !Catch::Contains("wrong-pass"));
    }
    ::setenv("GATEHOUSE_TEST_REDIS_PASSWORD", "s3cret-pass", 1);
    settings.password_file.clear();
    settings.password_env = "GATEHOUSE_TEST_REDIS_PASSWORD";
    CHECK(state::make_redis_backend(settings)->get("k") == "v");
}

TEST_CASE("redis: a connection whose server turned replica is not kept in the pool", "[state][redis]") {
    RedisServer server;
    auto settings = server.settings("role:");
    settings.pool_size = 1; // one pooled connection: CLIENT ID tells whether it is the same one
    state::RedisClient client(settings);
    const auto id = [&client] { return client.command({"CLIENT", "ID"}).integer; };
    const long long first = id();
    CHECK(id() == first);
    // A failover demotes the server the address leads to: it keeps every
    // connection open and refuses writes on them (READONLY).
    client.command({"REPLICAOF", "127.0.0.1", "1"});
    CHECK_THROWS_AS(client.command({"SET", "role:k", "v"}), state::RedisErrorReply);
    client.command({"REPLICAOF", "NO", "ONE"});
    // The refused connection was closed, not pooled: the next command
    // connects again (to whatever the address leads to now).
    CHECK(id() != first);
    client.command({"SET", "role:k", "v"});
    // Other error replies leave the connection as it is.
    CHECK_THROWS_AS(client.command({"NOSUCHCOMMAND"}), state::RedisErrorReply);
    const long long kept = id();
    CHECK_THROWS_AS(client.command({"NOSUCHCOMMAND"}), state::RedisErrorReply);
    CHECK(id() == kept);
}

#else

TEST_CASE("redis: the backend's tests need redis-server", "[state][redis]") {
    WARN("redis-server is not installed: the Redis backend is untested here (scripts/install-deps.sh installs it)");
}

#endif

#ifdef GATEHOUSE_REDIS_SERVER

namespace {

config::Config redis_host_config(const std::filesystem::path& socket) {
    return config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                        "\nplugins: [echo.so]\nsession:\n  backend: redis\n"
                                        "  pinned: {store: shop, user: ann}\n"
                                        "  redis: {url: \"unix://" +
                                        socket.string() + "\", key_prefix: \"host-test:\"}\n",
                                    "test.yaml", "/");
}

} // namespace

TEST_CASE("a host on session.backend redis starts on it, and does not start without it", "[state][redis]") {
    RedisServer server;
    { serve::Host host(redis_host_config(server.socket()), serve::Transports{true, false}); }
    server.stop();
    try {
        serve::Host host(redis_host_config(server.socket()), serve::Transports{true, false});
        FAIL("a host started without its Redis");
    } catch (const serve::HostError& e) {
        CHECK(e.status() == 1);
        CHECK_THAT(e.what(), Catch::Contains(server.socket().string()));
    }
}

TEST_CASE("redis: a URL whose port is not a number is named, without the password", "[state][redis]") {
    config::RedisSettings settings;
    settings.url = "redis://user:hunter2@cache:sixty/0";
    try {
        state::make_redis_backend(settings);
        FAIL("a malformed URL was accepted");
    } catch (const state::BackendError& e) {
        CHECK_THAT(e.what(), Catch::Contains("session.redis.url"));
        CHECK_THAT(e.what(), !Catch::Contains("hunter2"));
    }
}

TEST_CASE("session.redis is read with its defaults, and a URL of another scheme is named", "[state][redis]") {
    auto cfg = config::load_config_text("session:\n  backend: redis\n  pinned: {store: s, user: u}\n"
                                        "  redis: {url: \"redis://cache:6380/2\", pool_size: 4}\n",
                                        "test.yaml", "/");
    CHECK(cfg.session.backend == "redis");
    CHECK(cfg.session.redis.url == "redis://cache:6380/2");
    CHECK(cfg.session.redis.pool_size == 4);
    CHECK(cfg.session.redis.key_prefix == "gatehouse:");
    try {
        config::load_config_text("session:\n  backend: redis\n  redis: {url: \"http://cache\"}\n", "test.yaml", "/");
        FAIL("an http URL was accepted");
    } catch (const config::ConfigError& e) {
        CHECK_THAT(e.what(), Catch::Contains("test.yaml:3"));
        CHECK_THAT(e.what(), Catch::Contains("session.redis.url"));
    }
}

#endif
