#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/list_cursor.hpp"
#include "protocol/mcp_server.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <mutex>

using namespace gatehouse;
using protocol::Json;

namespace {

class RecordingOutbound final : public protocol::Outbound {
public:
    void send(const Json& message) override {
        std::lock_guard lock(mutex_);
        sent_.push_back(message);
    }
    std::vector<Json> take() {
        std::lock_guard lock(mutex_);
        return std::exchange(sent_, {});
    }

private:
    std::mutex mutex_;
    std::vector<Json> sent_;
};

// One McpServer over the echo family, with pages of 3 tools, and one
// connection whose answers are recorded.
struct Harness {
    std::unique_ptr<plugins::ToolRegistry> registry;
    gate::GatePipeline gate;
    protocol::RequestPool pool{1};
    std::unique_ptr<protocol::McpServer> server;
    std::shared_ptr<RecordingOutbound> out = std::make_shared<RecordingOutbound>();
    std::shared_ptr<protocol::Connection> connection =
        std::make_shared<protocol::Connection>(out, auth::Principal{"tester", "local", {}, {}});

    Harness() {
        auto cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                                "\nplugins: [echo.so]\nlimits: {page_size: 3, max_json_depth: 8}\n",
                                            "test.yaml", "/");
        plugins::LoadReport report;
        registry = plugins::PluginLoader::load(cfg, report);
        REQUIRE(report.failures.empty());
        cfg.server.version = "9.9.9";
        server = std::make_unique<protocol::McpServer>(*registry, gate, cfg.server, cfg.limits, pool);
    }

    // Sends one line and returns the one answer it produced (null when none).
    Json ask_text(const std::string& line) {
        server->on_message(connection, line);
        auto sent = out->take();
        REQUIRE(sent.size() <= 1);
        return sent.empty() ? Json() : sent[0];
    }
    Json ask(const Json& message) { return ask_text(message.dump()); }
};

Json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", Json::object()}};
}

Json request(int id, const std::string& method, Json params = Json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

int error_code(const Json& answer) {
    return answer.at("error").at("code").get<int>();
}

} // namespace

TEST_CASE("initialize answers the 2025-11-25 handshake once per connection", "[server]") {
    Harness h;
    auto answer = h.ask(request(1, "initialize",
                                {{"protocolVersion", "2025-11-25"},
                                 {"capabilities", Json::object()},
                                 {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    CHECK(answer["id"] == 1);
    CHECK(answer["result"]["protocolVersion"] == "2025-11-25");
    CHECK(answer["result"]["serverInfo"]["name"] == "gatehouse");
    CHECK(answer["result"]["serverInfo"]["version"] == "9.9.9");
    CHECK(answer["result"]["capabilities"].contains("tools"));

    CHECK(h.ask_text(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").is_null());
    CHECK(h.ask(request(2, "ping"))["result"] == Json::object());
    CHECK(error_code(h.ask(request(3, "initialize", {{"protocolVersion", "2025-11-25"}}))) == -32600);
}

TEST_CASE("ping needs no handshake, other legacy methods do", "[server]") {
    Harness h;
    CHECK(h.ask(request(1, "ping"))["result"] == Json::object());
    auto refused = h.ask(request(2, "tools/list"));
    CHECK(error_code(refused) == -32602);
    CHECK_THAT(refused["error"]["message"].get<std::string>(), Catch::Contains("initialize"));
}

TEST_CASE("server/discover answers a stateless request with its _meta", "[server]") {
    Harness h;
    auto answer = h.ask(request(7, "server/discover", {{"_meta", modern_meta()}}));
    const auto& result = answer.at("result");
    CHECK(result["supportedVersions"] == Json::array({"2026-07-28", "2025-11-25"}));
    CHECK(result["resultType"] == "complete");
    CHECK(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "gatehouse");
    // discover is not a legacy method.
    h.ask(request(8, "initialize", {{"protocolVersion", "2025-11-25"}}));
    CHECK(error_code(h.ask(request(9, "server/discover"))) == -32601);
}

TEST_CASE("tools/list pages through every tool with opaque cursors", "[server]") {
    Harness h;
    std::vector<std::string> seen;
    Json params = {{"_meta", modern_meta()}};
    for (int page = 0; page < 10; ++page) {
        auto answer = h.ask(request(page, "tools/list", params));
        const auto& result = answer.at("result");
        CHECK(result["tools"].size() <= 3);
        for (const auto& t : result["tools"])
            seen.push_back(t["name"]);
        if (!result.contains("nextCursor")) break;
        params["cursor"] = result["nextCursor"];
    }
    std::vector<std::string> expected;
    for (const auto* t : h.registry->ordered())
        expected.push_back(t->name);
    CHECK(seen == expected);
    CHECK(seen.size() == 8);
}

TEST_CASE("tools/list refuses bad cursors as invalid params", "[server]") {
    Harness h;
    const auto& fingerprint = h.registry->fingerprint();
    for (const Json& cursor : {Json("garbage!"), Json(protocol::encode_cursor(fingerprint + "0", 3)),
                               Json(protocol::encode_cursor(fingerprint, 9)), Json(42)}) {
        INFO(cursor);
        auto answer = h.ask(request(1, "tools/list", {{"_meta", modern_meta()}, {"cursor", cursor}}));
        CHECK(error_code(answer) == -32602);
    }
    // The end of the list itself is a valid, empty page.
    auto end = h.ask(
        request(2, "tools/list", {{"_meta", modern_meta()}, {"cursor", protocol::encode_cursor(fingerprint, 8)}}));
    CHECK(end["result"]["tools"].empty());
}

TEST_CASE("malformed messages get JSON-RPC errors", "[server]") {
    Harness h;
    CHECK(error_code(h.ask_text("{not json")) == -32700);
    CHECK(error_code(h.ask_text("[1,2]")) == -32600);
    CHECK(error_code(h.ask_text("42")) == -32600);
    CHECK(error_code(h.ask_text(R"({"id":1,"method":"ping"})")) == -32600);
    CHECK(error_code(h.ask_text(R"({"jsonrpc":"2.0","id":1})")) == -32600);
    CHECK(error_code(h.ask_text(R"({"jsonrpc":"2.0","id":null,"method":"ping"})")) == -32600);
    CHECK(error_code(h.ask_text(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})")) == -32602);
    CHECK(error_code(h.ask_text(R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[[[[[[[[[1]]]]]]]]]}})")) ==
          -32600);
    auto unknown = h.ask(request(5, "tools/frobnicate", {{"_meta", modern_meta()}}));
    CHECK(unknown["id"] == 5);
    CHECK(error_code(unknown) == -32601);
}

TEST_CASE("stateless requests name what their _meta lacks", "[server]") {
    Harness h;
    auto no_caps =
        h.ask(request(1, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}));
    CHECK(error_code(no_caps) == -32602);
    CHECK_THAT(no_caps["error"]["message"].get<std::string>(), Catch::Contains("clientCapabilities"));

    auto old =
        h.ask(request(2, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2024-11-05"}}}}));
    CHECK(error_code(old) == -32022);
    CHECK(old["error"]["data"]["requested"] == "2024-11-05");
}

TEST_CASE("tools/call runs the plugin on the pool and answers once", "[server]") {
    Harness h;
    h.server->on_message(
        h.connection,
        request(11, "tools/call", {{"_meta", modern_meta()}, {"name", "echo"}, {"arguments", {{"text", "hi"}}}})
            .dump());
    h.server->on_message(h.connection, request(12, "tools/call", {{"_meta", modern_meta()}, {"name", "nope"}}).dump());
    h.pool.stop(); // finishes the queued calls
    auto sent = h.out->take();
    REQUIRE(sent.size() == 2);
    std::map<int, Json> by_id;
    for (auto& m : sent)
        by_id[m["id"].get<int>()] = m;
    CHECK(by_id[11]["result"]["structuredContent"] == Json{{"text", "hi"}});
    CHECK(by_id[11]["result"].value("isError", false) == false);
    CHECK(error_code(by_id[12]) == -32602);
}

TEST_CASE("one principal at max_in_flight_per_principal is refused while another is served", "[server][limits]") {
    auto cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                            "\nplugins: [echo.so]\nlimits: {max_in_flight_per_principal: 1}\n",
                                        "test.yaml", "/");
    plugins::LoadReport report;
    auto registry = plugins::PluginLoader::load(cfg, report);
    REQUIRE(report.failures.empty());
    gate::GatePipeline gate;
    protocol::RequestPool pool{2};
    protocol::McpServer server(*registry, gate, cfg.server, cfg.limits, pool);
    auto out_a = std::make_shared<RecordingOutbound>();
    auto out_b = std::make_shared<RecordingOutbound>();
    auto alice = std::make_shared<protocol::Connection>(out_a, auth::Principal{"alice", "token", {}, {}});
    auto bob = std::make_shared<protocol::Connection>(out_b, auth::Principal{"bob", "token", {}, {}});
    auto call = [](int id, const std::string& name, Json args) {
        return request(id, "tools/call", {{"_meta", modern_meta()}, {"name", name}, {"arguments", std::move(args)}})
            .dump();
    };

    server.on_message(alice, call(1, "slow", {{"ms", 60000}}));
    server.on_message(alice, call(2, "echo", {{"text", "too many"}}));
    auto refused = out_a->take(); // answered at once, on this thread
    REQUIRE(refused.size() == 1);
    CHECK(refused[0]["id"] == 2);
    CHECK(error_code(refused[0]) == -32603);
    CHECK(refused[0]["error"]["data"]["code"] == "TOO_MANY_IN_FLIGHT");
    CHECK(refused[0]["error"]["data"]["limit"] == "max_in_flight_per_principal");

    server.on_message(bob, call(3, "echo", {{"text", "bob is served"}}));
    CHECK(server.in_flight() >= 1);
    alice->cancel(Json(1));
    pool.stop(); // bob's call has run; alice's slow call stopped when cancelled
    auto served = out_b->take();
    REQUIRE(served.size() == 1);
    CHECK(served[0]["result"]["structuredContent"]["text"] == "bob is served");
    CHECK(out_a->take().empty()); // the cancelled call got no answer
    CHECK(server.in_flight() == 0);
}
