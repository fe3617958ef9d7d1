// The typed request a message is decoded into, once, at the edge.
#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/request_decoder.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

using namespace gatehouse;
using protocol::Incoming;
using protocol::Json;

namespace {

class NoOutbound final : public protocol::Outbound {
public:
    void send(const Json&) override {}
};

struct Harness {
    std::shared_ptr<const plugins::ToolRegistry> registry;
    std::unique_ptr<plugins::LiveRegistry> live;
    std::unique_ptr<protocol::ToolDisclosure> disclosure;
    std::unique_ptr<protocol::RequestDecoder> decoder;
    plugins::HostServices host;
    std::shared_ptr<protocol::Connection> connection;

    explicit Harness(auth::Principal principal = {.subject = "tester", .kind = "local"})
        : connection(std::make_shared<protocol::Connection>(std::make_shared<NoOutbound>(), std::move(principal))) {
        auto cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() + "\nplugins: [echo.so]\n",
                                            "test.yaml", "/");
        plugins::LoadReport report;
        registry = plugins::PluginLoader::load(cfg, report);
        REQUIRE(report.failures.empty());
        live = std::make_unique<plugins::LiveRegistry>(registry);
        disclosure = std::make_unique<protocol::ToolDisclosure>(*live);
        decoder = std::make_unique<protocol::RequestDecoder>(*live, *disclosure, &host);
    }

    Incoming read(Json message) { return decoder->read(*connection, connection->principal(), std::move(message)); }
};

Json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", Json::object()},
            {"progressToken", "p1"}};
}

Json call(Json params) {
    params["_meta"] = modern_meta();
    return {{"jsonrpc", "2.0"}, {"id", 9}, {"method", "tools/call"}, {"params", std::move(params)}};
}

} // namespace

TEST_CASE("a tools/call decodes into its revision, _meta, tool and arguments with one lookup", "[decode]") {
    Harness h;
    const auto lookups = h.registry->lookups();
    Incoming in = h.read(call({{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
    CHECK(h.registry->lookups() == lookups + 1);
    REQUIRE(in.kind == Incoming::Kind::request);
    REQUIRE(in.error.is_null());
    const protocol::Request& r = in.request;
    CHECK(r.id == 9);
    CHECK(r.method == "tools/call");
    CHECK(r.revision == protocol::Revision::modern_2026_07_28);
    CHECK(r.progress_token == "p1");
    CHECK(r.client_capabilities == Json::object());
    CHECK(r.connection == h.connection.get());
    CHECK(r.host == &h.host);
    REQUIRE(r.call);
    CHECK(r.call->tool == h.registry->find("echo"));
    CHECK(r.call->arguments == Json{{"text", "hi"}});
    CHECK(r.call->forwarded == nullptr);
    CHECK_FALSE(r.call->scope_refusal);
}

TEST_CASE("tools/call without arguments decodes to an empty object", "[decode]") {
    Harness h;
    Incoming in = h.read(call({{"name", "noop"}}));
    REQUIRE(in.request.call);
    CHECK(in.request.call->arguments == Json::object());
}

TEST_CASE("a tools/call the decoder cannot resolve carries its -32602, answered as usual", "[decode]") {
    Harness h;
    for (const Json& params : {Json{{"arguments", Json::object()}}, Json{{"name", 7}}, Json{{"name", "nope"}},
                               Json{{"name", "echo"}, {"arguments", Json::array()}}}) {
        INFO(params.dump());
        Incoming in = h.read(call(params));
        CHECK(in.kind == Incoming::Kind::request);
        CHECK(in.error["error"]["code"] == -32602);
        CHECK_FALSE(in.rejected);
        CHECK_FALSE(in.request.call);
    }
    Incoming long_name = h.read(call({{"name", std::string(300, 'n')}}));
    CHECK_THAT(long_name.error["error"]["message"].get<std::string>(), Catch::Contains("(300 bytes)"));
}

TEST_CASE("a request whose _meta is broken is rejected, its tool still resolved for the edge checks", "[decode]") {
    Harness h;
    Json message = call({{"name", "echo"}, {"arguments", {{"text", "hi"}}}});
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1999-01-01";
    Incoming in = h.read(std::move(message));
    CHECK(in.rejected);
    CHECK(in.error["error"]["code"] == -32022);
    REQUIRE(in.request.call);
    CHECK(in.request.call->tool->name == "echo");
}

TEST_CASE("a token without the tool's scope decodes with its refusal", "[decode]") {
    Harness h(auth::Principal{"robot", "token", "client", {}, "https://issuer"});
    plugins::Tool* echo = const_cast<plugins::Tool*>(h.registry->find("echo"));
    const std::string before = echo->scope;
    echo->scope = "echo:write";
    Incoming in = h.read(call({{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
    echo->scope = before;
    REQUIRE(in.request.call);
    REQUIRE(in.request.call->scope_refusal);
    CHECK(in.request.call->scope_refusal->code == "INSUFFICIENT_SCOPE");
}

TEST_CASE("the envelope decides the kind: request, notification, response or invalid", "[decode]") {
    Harness h;
    CHECK(h.read(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).kind ==
          Incoming::Kind::notification);
    CHECK(h.read(Json{{"jsonrpc", "2.0"}, {"id", 3}, {"result", Json::object()}}).kind == Incoming::Kind::response);
    for (const Json& bad :
         {Json::array({1}), Json(42), Json{{"id", 1}, {"method", "ping"}}, Json{{"jsonrpc", "2.0"}, {"id", 1}},
          Json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"method", "ping"}},
          Json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", 5}}}) {
        INFO(bad.dump());
        Incoming in = h.read(bad);
        CHECK(in.kind == Incoming::Kind::invalid);
        CHECK(in.error["error"]["code"] == -32600);
    }
}
