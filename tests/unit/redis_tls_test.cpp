// Redis over TLS (rediss://) against a real redis-server (Debian's is built
// with TLS), with certificates the openssl command makes for the run: state
// and the bus through the tunnel, certificates and names refused with the
// reason, mutual TLS, timeouts and a restart. Two servers serve the file: one
// that asks clients for no certificate, one that requires one.
#include "config/config_loader.hpp"
#include "redis_server.hpp"
#include "state/notification_bus.hpp"
#include "state/state_backend.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace gatehouse;
using namespace std::chrono_literals;

TEST_CASE("session.redis.tls is read for a rediss:// URL, and refused where it would do nothing",
          "[state][redis][tls]") {
    auto cfg = config::load_config_text("session:\n  backend: redis\n  pinned: {store: s, user: u}\n"
                                        "  redis:\n    url: \"rediss://cache:6380/2\"\n"
                                        "    tls: {ca_file: ca.pem, cert_file: /etc/gh/client.pem, key_file: "
                                        "client.key, server_name: cache.internal}\n",
                                        "test.yaml", "/etc/gh");
    CHECK(cfg.session.redis.url == "rediss://cache:6380/2");
    CHECK(cfg.session.redis.tls.ca_file == "/etc/gh/ca.pem");
    CHECK(cfg.session.redis.tls.cert_file == "/etc/gh/client.pem");
    CHECK(cfg.session.redis.tls.key_file == "/etc/gh/client.key");
    CHECK(cfg.session.redis.tls.server_name == "cache.internal");
    CHECK(cfg.session.redis.tls.verify);

    const auto refused = [](const std::string& redis, const std::string& says) {
        try {
            config::load_config_text("session:\n  backend: redis\n  redis:\n" + redis, "test.yaml", "/");
            FAIL("accepted: " << redis);
        } catch (const config::ConfigError& e) {
            CHECK_THAT(e.what(), Catch::Contains("test.yaml:"));
            CHECK_THAT(e.what(), Catch::Contains(says));
        }
    };
    refused("    url: \"redis://cache\"\n    tls: {ca_file: ca.pem}\n", "rediss://");
    refused("    tls: {ca_file: ca.pem}\n", "rediss://"); // the default URL is redis://
    refused("    url: \"rediss://cache\"\n    tls: {cert_file: c.pem}\n", "cert_file and key_file together");
    refused("    url: \"rediss://cache\"\n    tls: {verify: maybe}\n",
            "session.redis.tls.verify must be true or false");
    refused("    url: \"rediss://cache\"\n    tls: {ca: x}\n", "unknown key 'ca' in session.redis.tls");
    refused("    url: \"redis+tls://cache\"\n", "rediss://");
}

#if defined(GATEHOUSE_REDIS_SERVER) && defined(GATEHOUSE_OPENSSL_CLI)

using gatehouse::test::RedisServer;
using gatehouse::test::RedisTls;

namespace {

const std::string kPassword = "tls-s3cret-pass";

RedisServer& tls_server() {
    static RedisServer server(RedisTls{});
    return server;
}

// Requires a client certificate signed by the test CA, and a password.
RedisServer& mutual_tls_server() {
    static RedisServer server(RedisTls{true}, kPassword);
    return server;
}

config::RedisSettings plain_settings(const RedisServer& server, std::string prefix) {
    config::RedisSettings s;
    s.url = "unix://" + server.socket().string();
    s.key_prefix = std::move(prefix);
    return s;
}

// Refused at start with a BackendError naming where and why, and never the password.
void check_refused(const config::RedisSettings& settings, const std::string& why) {
    try {
        state::make_redis_backend(settings);
        FAIL("connected, where it should be refused with: " << why);
    } catch (const state::BackendError& e) {
        INFO(e.what());
        CHECK_THAT(e.what(), Catch::Contains("Redis at rediss://"));
        CHECK_THAT(e.what(), Catch::Contains(why));
        CHECK_THAT(e.what(), !Catch::Contains(kPassword));
    }
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds within = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(20ms);
    }
    return condition();
}

bool serves(state::StateBackend& backend) {
    try {
        backend.put("probe", "1", 0ms);
        return backend.get("probe") == "1";
    } catch (const state::BackendError&) {
        return false;
    }
}

// A paused server answers again when the check ends, however it ends.
struct Paused {
    RedisServer& server;
    explicit Paused(RedisServer& s) : server(s) { server.pause(); }
    ~Paused() { server.resume(); }
};

} // namespace

TEST_CASE("redis tls: get, put and take over rediss://, by address and by name, into the same Redis",
          "[state][redis][tls]") {
    auto& server = tls_server();
    auto backend = state::make_redis_backend(server.settings("tls-state:"));
    CHECK_FALSE(backend->get("k"));
    backend->put("k", std::string("v\0binary", 8), 0ms);
    CHECK(backend->get("k") == std::string("v\0binary", 8));
    CHECK(backend->take("k") == std::string("v\0binary", 8));
    CHECK_FALSE(backend->take("k"));

    // Larger than what the tunnel moves at once, both ways.
    std::string big(300 * 1024, '\0');
    for (std::size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>(i * 7 + i / 1024);
    backend->put("big", big, 0ms);
    CHECK(backend->get("big") == big);

    // The pool's connections, in use at once from several threads.
    std::atomic<int> right{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; ++i) {
                const auto key = "t" + std::to_string(t) + "-" + std::to_string(i);
                backend->put(key, key, 0ms);
                if (backend->get(key) == key) ++right;
            }
        });
    for (auto& t : threads)
        t.join();
    CHECK(right == 160);

    // The same Redis as its unix socket: nothing was kept anywhere else.
    CHECK(state::make_redis_backend(plain_settings(server, "tls-state:"))->get("big") == big);

    // By name: localhost is in the certificate too, and checked as a name.
    auto by_name = server.settings("tls-state:");
    by_name.url = "rediss://localhost:" + std::to_string(server.tls_port());
    CHECK(state::make_redis_backend(by_name)->get("big") == big);
}

TEST_CASE("redis tls: an untrusted certificate and a name it does not carry are refused, saying which",
          "[state][redis][tls]") {
    auto& server = tls_server();
    const auto& certs = test::test_certificates();

    auto settings = server.settings();
    settings.tls.ca_file = certs.other_ca;
    check_refused(settings, "certificate not trusted");
    check_refused(settings, certs.other_ca.string());
    // By default the system's trust store, which knows no test CA.
    settings.tls.ca_file.clear();
    check_refused(settings, "certificate not trusted");
    check_refused(settings, "the system's trust store");

    settings = server.settings();
    settings.tls.server_name = "redis.example.com";
    check_refused(settings, "hostname mismatch");
    check_refused(settings, "redis.example.com");
    settings.tls.server_name = "127.0.0.2"; // an address the certificate does not carry
    check_refused(settings, "hostname mismatch");

    // verify: false takes any certificate under any name (and warns).
    settings.tls.ca_file = certs.other_ca;
    settings.tls.server_name = "redis.example.com";
    settings.tls.verify = false;
    auto unchecked = state::make_redis_backend(settings);
    unchecked->put("k", "v", 0ms);
    CHECK(unchecked->get("k") == "v");

    settings = server.settings();
    settings.tls.ca_file = server.dir() / "missing-ca.pem";
    check_refused(settings, "cannot read the CA file " + settings.tls.ca_file.string());
    check_refused(settings, "session.redis.tls");

    // A redis:// URL to the TLS port is not TLS: that server never answers it.
    settings = server.settings();
    settings.url = "redis://127.0.0.1:" + std::to_string(server.tls_port());
    settings.connect_timeout_ms = 300;
    settings.command_timeout_ms = 300;
    auto backend = state::make_redis_backend(settings); // hiredis only connects
    CHECK_THROWS_AS(backend->get("k"), state::BackendError);
}

TEST_CASE("redis tls: mutual TLS with a client certificate works, and without one is refused", "[state][redis][tls]") {
    auto& server = mutual_tls_server();
    const auto& certs = test::test_certificates();
    ::setenv("GATEHOUSE_TEST_REDIS_TLS_PASSWORD", kPassword.c_str(), 1);
    auto settings = server.settings("mtls:");
    settings.password_env = "GATEHOUSE_TEST_REDIS_TLS_PASSWORD";
    settings.tls.cert_file = certs.client_cert;
    settings.tls.key_file = certs.client_key;
    auto backend = state::make_redis_backend(settings);
    backend->put("k", "v", 0ms);
    CHECK(backend->get("k") == "v");
    CHECK(backend->take("k") == "v");

    // TLS 1.3 tells the client of a missing certificate after its
    // handshake: the refusal still comes at connect, with its reason.
    auto without = settings;
    without.tls.cert_file.clear();
    without.tls.key_file.clear();
    check_refused(without, "requires a client certificate");

    auto foreign = settings;
    foreign.tls.cert_file = certs.other_client_cert;
    foreign.tls.key_file = certs.other_client_key;
    check_refused(foreign, "refused the client certificate");

    auto mismatched = settings;
    mismatched.tls.key_file = certs.server_key;
    check_refused(mismatched, "cannot use the client key");

    auto wrong_password = settings;
    ::setenv("GATEHOUSE_TEST_REDIS_TLS_PASSWORD", "not-the-password", 1);
    check_refused(wrong_password, "AUTH refused");
    ::setenv("GATEHOUSE_TEST_REDIS_TLS_PASSWORD", kPassword.c_str(), 1);

    // The bus's subscription is a connection like the others.
    std::atomic<int> heard{0}; // before the buses: their threads write it until they go
    auto a = state::make_redis_bus(settings);
    auto b = state::make_redis_bus(settings);
    b->subscribe([&](const state::Change&) { ++heard; });
    REQUIRE(eventually([&] {
        a->publish({state::Change::Kind::tools_list, {}});
        return heard > 0;
    }));
}

TEST_CASE("redis tls: the bus over rediss://, and Redis restarted is reached again by the bus and the backend",
          "[state][redis][tls][bus]") {
    auto& server = tls_server();
    std::mutex mutex; // before the buses: their threads write here until they go
    std::vector<state::Change> on_b;
    auto a = state::make_redis_bus(server.settings("tls-bus:"));
    auto b = state::make_redis_bus(server.settings("tls-bus:"));
    auto backend = state::make_redis_backend(server.settings("tls-bus:"));
    b->subscribe([&](const state::Change& change) {
        std::lock_guard lock(mutex);
        on_b.push_back(change);
    });
    const auto count = [&] {
        std::lock_guard lock(mutex);
        return on_b.size();
    };
    a->publish({state::Change::Kind::resource_updated, "test://over-tls"});
    REQUIRE(eventually([&] { return count() == 1; }));
    {
        std::lock_guard lock(mutex);
        CHECK(on_b[0].uri == "test://over-tls");
    }
    backend->put("k", "v", 0ms);

    server.stop();
    REQUIRE(eventually([&] { return b->trouble().has_value(); }));
    try {
        backend->get("k");
        FAIL("no error with Redis down");
    } catch (const state::BackendError& e) {
        CHECK_THAT(e.what(), Catch::Contains("rediss://127.0.0.1:" + std::to_string(server.tls_port())));
    }
    server.start(); // an empty Redis: nothing was saved
    REQUIRE(eventually([&] { return !b->trouble(); }));
    REQUIRE(eventually([&] { return serves(*backend); }));
    CHECK_FALSE(backend->get("k"));
    const auto before = count();
    REQUIRE(eventually([&] {
        a->publish({state::Change::Kind::prompts_list, {}});
        return count() > before;
    }));
}

TEST_CASE("redis tls: a Redis that stops answering is a BackendError within the timeouts, not a wait without end",
          "[state][redis][tls]") {
    auto& server = tls_server();
    auto settings = server.settings("tls-timeout:");
    settings.connect_timeout_ms = 300;
    settings.command_timeout_ms = 300;
    auto backend = state::make_redis_backend(settings);
    backend->put("k", "v", 0ms);
    {
        Paused paused(server);
        // A command on an open connection: hiredis's timeout on the tunnel's end.
        CHECK_THROWS_AS(backend->get("k"), state::BackendError);
        // A new connection: the kernel accepts it, the handshake is never answered.
        try {
            state::make_redis_backend(settings);
            FAIL("connected to a Redis that answers nothing");
        } catch (const state::BackendError& e) {
            CHECK_THAT(e.what(), Catch::Contains("no TLS session with 127.0.0.1:" + std::to_string(server.tls_port()) +
                                                 " within 300 ms"));
        }
    }
    REQUIRE(eventually([&] { return serves(*backend); }));
    CHECK(backend->get("k") == "v");
}

#else

TEST_CASE("redis tls: the tests need redis-server and the openssl command", "[state][redis][tls]") {
    WARN("redis-server or openssl is not installed: Redis over TLS is untested here (scripts/install-deps.sh)");
}

#endif
