#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/list_cursor.hpp"
#include "protocol/mcp_server.hpp"
#include "protocol/result_shape.hpp"
#include "recording_outbound.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <mutex>

using namespace gatehouse;
using protocol::Json;
using test::RecordingOutbound;

namespace {

// One McpServer over the echo family, with pages of 3 tools, and one
// connection whose answers are recorded.
struct Harness {
    std::shared_ptr<const plugins::ToolRegistry> registry;
    std::unique_ptr<plugins::LiveRegistry> live;
    gate::GatePipeline gate;
    protocol::RequestPool pool{1};
    std::unique_ptr<protocol::McpServer> server;
    std::shared_ptr<RecordingOutbound> out = std::make_shared<RecordingOutbound>();
    std::shared_ptr<protocol::Connection> connection =
        std::make_shared<protocol::Connection>(out, auth::Principal{.subject = "tester", .kind = "local"});

    Harness() {
        auto cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                                "\nplugins: [echo.so]\nlimits: {page_size: 3, max_json_depth: 8}\n",
                                            "test.yaml", "/");
        plugins::LoadReport report;
        registry = plugins::PluginLoader::load(cfg, report);
        REQUIRE(report.failures.empty());
        cfg.server.version = "9.9.9";
        live = std::make_unique<plugins::LiveRegistry>(registry);
        server = std::make_unique<protocol::McpServer>(*live, gate, cfg.server, cfg.limits, pool);
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
    plugins::LiveRegistry live(std::move(registry));
    protocol::McpServer server(live, gate, cfg.server, cfg.limits, pool);
    auto out_a = std::make_shared<RecordingOutbound>();
    auto out_b = std::make_shared<RecordingOutbound>();
    auto alice = std::make_shared<protocol::Connection>(out_a, auth::Principal{.subject = "alice", .kind = "token"});
    auto bob = std::make_shared<protocol::Connection>(out_b, auth::Principal{.subject = "bob", .kind = "token"});
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

TEST_CASE("a second subscriptions/listen under an open one's id is refused, the first still stands", "[server]") {
    Harness h;
    auto listen =
        request(4, "subscriptions/listen", {{"_meta", modern_meta()}, {"notifications", {{"toolsListChanged", true}}}});
    CHECK(h.ask(listen)["method"] == "notifications/subscriptions/acknowledged");
    auto second = h.ask(listen);
    CHECK(error_code(second) == -32600);
    CHECK(second["id"] == 4);
    CHECK(h.server->open_subscriptions() == 1);
    h.connection->cancel(Json(4));
    CHECK(h.server->open_subscriptions() == 0);
    CHECK(h.ask(listen)["method"] == "notifications/subscriptions/acknowledged");
    h.server->close_subscriptions();
}

TEST_CASE("2025-11-25 in _meta without initialize is Invalid Request, not an unsupported version", "[server]") {
    Harness h;
    auto refused =
        h.ask(request(1, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2025-11-25"}}}}));
    CHECK(error_code(refused) == -32600);
    CHECK_THAT(refused["error"]["message"].get<std::string>(), Catch::Contains("initialize"));
    h.ask(request(2, "initialize", {{"protocolVersion", "2025-11-25"}}));
    CHECK(h.ask(request(3, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2025-11-25"}}}}))
              .contains("result"));
}

TEST_CASE("scope_refusal: a verified token without the tool's scope is refused, naming it", "[server][auth]") {
    plugins::Tool tool;
    tool.name = "ledger_balance";
    tool.scope = "ledger:read";
    const auth::Principal narrow{.subject = "ann", .kind = "token", .client_id = "app", .scopes = {"notes"}};
    const auth::Principal wide{
        .subject = "ann", .kind = "token", .client_id = "app", .scopes = {"notes", "ledger:read"}};
    const auth::Principal local{.subject = "ann", .kind = "local"};
    auto refusal = protocol::scope_refusal(tool, narrow);
    REQUIRE(refusal);
    CHECK(refusal->code == "INSUFFICIENT_SCOPE");
    CHECK(refusal->next["scope"] == "ledger:read");
    CHECK_THAT(refusal->message, Catch::Contains("'ledger:read'"));
    CHECK_FALSE(protocol::scope_refusal(tool, wide));
    CHECK_FALSE(protocol::scope_refusal(tool, local)); // no token, no scopes to check
    tool.scope.clear();
    CHECK_FALSE(protocol::scope_refusal(tool, narrow));
}

TEST_CASE("the published outputSchema is the tool's own or the refusal shape, references re-pointed", "[server]") {
    const Json own = {{"$schema", "http://json-schema.org/draft-07/schema#"},
                      {"type", "object"},
                      {"properties",
                       {{"item", {{"$ref", "#/$defs/item"}}},
                        {"same", {{"$ref", "#/properties/item"}}},
                        {"child", {{"$ref", "#"}}},
                        {"mode", {{"const", {{"$ref", "#/not/a/schema"}}}}}}},
                      {"required", {"item"}},
                      {"$defs", {{"item", {{"type", "string"}}}}}};
    const Json published = gate::published_output_schema(own);
    CHECK(published["type"] == "object");
    CHECK(published["$schema"] == own["$schema"]);
    CHECK(published["$defs"] == own["$defs"]);
    const Json& branch = published["anyOf"][0];
    CHECK_FALSE(branch.contains("$defs"));
    CHECK(branch["properties"]["item"]["$ref"] == "#/$defs/item");
    CHECK(branch["properties"]["same"]["$ref"] == "#/anyOf/0/properties/item");
    CHECK(branch["properties"]["child"]["$ref"] == "#/anyOf/0");
    CHECK(branch["properties"]["mode"]["const"]["$ref"] == "#/not/a/schema"); // data, left alone

    Json compilable = published;
    compilable["anyOf"][0]["properties"].erase("mode");
    auto compiled = schema::JsonSchema::compile(compilable);
    CHECK_FALSE(compiled->validate({{"item", "a"}, {"child", {{"item", "b"}}}}));
    CHECK_FALSE(
        compiled->validate(gate::Refusal{"NOT_CONNECTED", "m", Json::object()}.to_tool_result()["structuredContent"]));
    CHECK(compiled->validate({{"item", 5}}));
    CHECK(compiled->validate({{"child", {{"item", 5}}}, {"item", "a"}})); // the recursion follows the tool's own schema
    CHECK(compiled->validate({{"code", "X"}}));
}

TEST_CASE("content blocks are checked against the revisions' schema rules", "[server]") {
    using protocol::content_block_problem;
    CHECK_FALSE(content_block_problem({{"type", "text"}, {"text", "a"}}, "/content/0"));
    CHECK_FALSE(content_block_problem({{"type", "image"}, {"data", "aGk="}, {"mimeType", "image/png"}}, "/c"));
    CHECK_THAT(*content_block_problem({{"type", "text"}}, "/content/0"),
               Catch::StartsWith("at /content/0: a text block needs \"text\""));
    CHECK_THAT(*content_block_problem({{"type", "image"}, {"data", "aGk"}, {"mimeType", "image/png"}}, "/c"),
               Catch::StartsWith("at /c/data: must be base64"));
    CHECK_THAT(*content_block_problem({{"type", "image"}, {"data", "a=Gk"}, {"mimeType", "image/png"}}, "/c"),
               Catch::StartsWith("at /c/data"));
    CHECK(content_block_problem({{"type", "resource_link"}, {"uri", "x:y"}, {"name", "n"}, {"size", 1.5}}, "/c"));
    CHECK(content_block_problem({{"type", "text"}, {"text", "a"}, {"annotations", {{"priority", -0.1}}}}, "/c"));
    CHECK(content_block_problem({{"type", "text"}, {"text", "a"}, {"annotations", {{"audience", "user"}}}}, "/c"));
    CHECK(content_block_problem({{"type", "resource"}, {"resource", {{"uri", "x:y"}, {"blob", "!!"}}}}, "/c"));
    CHECK(content_block_problem(Json::array(), "/c"));
    CHECK_THAT(*content_block_problem({{"type", std::string(1000, 'v')}}, "/c"),
               !Catch::Contains(std::string(100, 'v')));

    using protocol::Revision;
    using protocol::tool_result_problem;
    CHECK_FALSE(
        tool_result_problem({{"content", Json::array()}, {"structuredContent", 5}}, Revision::modern_2026_07_28));
    CHECK(tool_result_problem({{"content", Json::array()}, {"structuredContent", 5}}, Revision::legacy_2025_11_25));
    CHECK(tool_result_problem({{"isError", 1}}, Revision::modern_2026_07_28));
    CHECK(tool_result_problem({{"resultType", "input_required"}}, Revision::modern_2026_07_28));
    CHECK_FALSE(tool_result_problem({{"resultType", "complete"}}, Revision::modern_2026_07_28));
}
