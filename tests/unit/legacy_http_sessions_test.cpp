// The 2025-11-25 Mcp-Session-Id table on one instance: however a session
// ends, what it followed on the bus (resources/subscribe, list changes)
// leaves the bus with it.
#include "protocol/subscriptions.hpp"
#include "recording_outbound.hpp"
#include "transport/legacy_http_sessions.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

using namespace gatehouse;
using protocol::Json;
using test::RecordingOutbound;

namespace {

// A bus, the subscriptions that put 2025-11-25 listeners on it, and
// connections that follow list changes and resources as an initialized
// session that subscribed does.
Json resources_followed() {
    return {{"resources", {{"subscribe", true}, {"listChanged", true}}}};
}

struct Following {
    std::shared_ptr<state::NotificationBus> bus = std::make_shared<state::NotificationBus>();
    protocol::Subscriptions subscriptions{bus, resources_followed, Json::object(), 16};

    std::shared_ptr<protocol::Connection> connect(const std::string& user,
                                                  std::shared_ptr<RecordingOutbound> out = nullptr) {
        if (!out) out = std::make_shared<RecordingOutbound>();
        return std::make_shared<protocol::Connection>(out, auth::Principal{.subject = user, .kind = "local"});
    }

    // As initialize and `resources` resources/subscribe do.
    void follow(protocol::Connection& connection, int resources) {
        subscriptions.follow_list_changes(connection);
        for (int i = 0; i < resources; ++i) {
            protocol::Request request;
            request.id = i + 2;
            request.method = "resources/subscribe";
            request.params = {{"uri", "test://resource/" + std::to_string(i)}};
            request.connection = &connection;
            subscriptions.follow_resource(request, true);
        }
    }
};

} // namespace

TEST_CASE("a 2025-11-25 session leaves no listener on the bus however it ends", "[legacy_sessions]") {
    Following f;
    auto out = std::make_shared<RecordingOutbound>();
    auto connection = f.connect("ann", out);
    f.follow(*connection, 3);
    REQUIRE(f.bus->listener_count() == 4); // list changes and three resources

    // Followed while the session lives.
    f.bus->publish({state::Change::Kind::resource_updated, "test://resource/1"});
    f.bus->publish({state::Change::Kind::tools_list, {}});
    CHECK(out->take().size() == 2);

    // The connection itself stays alive in each case (a request still
    // running holds it): ending the session must not wait for it to go.
    SECTION("DELETE") {
        transport::LegacyHttpSessions sessions(8, 8, std::chrono::hours(1));
        const auto id = sessions.open(connection);
        REQUIRE(id);
        REQUIRE(sessions.close(*id, "ann"));
    }
    SECTION("idle expiry") {
        transport::LegacyHttpSessions sessions(8, 8, std::chrono::seconds(0));
        const auto id = sessions.open(connection);
        REQUIRE(id);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        CHECK(sessions.find(*id, connection->principal()) == nullptr);
        CHECK(sessions.size() == 0);
    }
    SECTION("eviction by a newcomer when the table is full") {
        transport::LegacyHttpSessions sessions(1, 1, std::chrono::hours(1));
        REQUIRE(sessions.open(connection));
        auto newcomer = f.connect("bob");
        REQUIRE(sessions.open(newcomer));
        CHECK(sessions.size() == 1);
    }
    SECTION("shutdown") {
        transport::LegacyHttpSessions sessions(8, 8, std::chrono::hours(1));
        REQUIRE(sessions.open(connection));
        sessions.close_all();
    }
    CHECK(f.bus->listener_count() == 0);
    f.bus->publish({state::Change::Kind::resource_updated, "test://resource/1"});
    f.bus->publish({state::Change::Kind::tools_list, {}});
    CHECK(out->take().empty());

    // A request that was still running follows nothing more, though the
    // handshake keeps what it subscribed to.
    f.follow(*connection, 5);
    CHECK(f.bus->listener_count() == 0);
    std::lock_guard lock(connection->legacy_mutex);
    CHECK(connection->legacy_resource_subscriptions.size() == 5);
}

TEST_CASE("a connection that goes takes its listeners off the bus with it", "[legacy_sessions]") {
    Following f;
    auto connection = f.connect("ann");
    f.follow(*connection, 2);
    REQUIRE(f.bus->listener_count() == 3);
    connection.reset();
    CHECK(f.bus->listener_count() == 0);
}

TEST_CASE("resources/unsubscribe takes that resource's listener off the bus", "[legacy_sessions]") {
    Following f;
    auto connection = f.connect("ann");
    f.follow(*connection, 2);
    protocol::Request request;
    request.id = 9;
    request.method = "resources/unsubscribe";
    request.params = {{"uri", "test://resource/0"}};
    request.connection = connection.get();
    f.subscriptions.follow_resource(request, false);
    CHECK(f.bus->listener_count() == 2);
}
