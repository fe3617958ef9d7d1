// ToolCall on its own: a decoded target in, a CallToolResult out. The tool
// is taken from the target as it is; nothing here looks it up again.
#include "config/config_loader.hpp"
#include "gate/gate_pipeline.hpp"
#include "mrtr/state_keys.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/json_writer.hpp"
#include "protocol/tool_call.hpp"
#include "limits/redis_buckets.hpp"
#include "recording_outbound.hpp"
#include "redis_server.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <thread>

using namespace gatehouse;
using protocol::Json;
using test::RecordingOutbound;

namespace {

// A gate check that refuses everything it is asked, and counts the asks.
class RefuseAll final : public gate::GateCheck {
public:
    std::optional<gate::Refusal> check(const gate::GateContext&) override {
        ++asked;
        return gate::Refusal{"NOT_GRANTED", "No."};
    }
    int asked = 0;
};

// A gate check that lets the first `passes` asks through and refuses the rest.
class PassThenRefuse final : public gate::GateCheck {
public:
    explicit PassThenRefuse(int passes) : passes_(passes) {}
    std::optional<gate::Refusal> check(const gate::GateContext&) override {
        if (++asked <= passes_) return std::nullopt;
        return gate::Refusal{"STORE_SWITCHED", "The store changed."};
    }
    std::atomic<int> asked{0};

private:
    int passes_;
};

struct Harness {
    std::shared_ptr<const plugins::ToolRegistry> registry = load();
    plugins::LiveRegistry live{registry};
    gate::GatePipeline gate;
    protocol::ToolDisclosure disclosure{live};
    protocol::RequestDecoder decoder{live, disclosure, nullptr};
    limits::RateLimiter rate_limiter;
    protocol::InputRounds input_rounds{
        mrtr::make_request_state_sealer(config::InputRequestSettings{}, "gatehouse-test"), std::chrono::seconds(30)};
    protocol::ToolCall tool_call{{gate, decoder, disclosure, rate_limiter, input_rounds},
                                 limits::ArgumentBounds{1024, 10000}};
    std::shared_ptr<RecordingOutbound> out = std::make_shared<RecordingOutbound>();
    std::shared_ptr<protocol::Connection> connection;

    explicit Harness(config::RateLimits rates = {}, auth::Principal principal = {.subject = "tester", .kind = "local"},
                     std::shared_ptr<limits::BucketStore> buckets = nullptr)
        : rate_limiter(std::move(rates), std::move(buckets)),
          connection(std::make_shared<protocol::Connection>(out, std::move(principal))) {}

    static std::unique_ptr<plugins::ToolRegistry> load() {
        auto cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                                "\nplugins: [echo.so, conformance.so, rawjson.so]\n",
                                            "test.yaml", "/");
        plugins::LoadReport report;
        auto registry = plugins::PluginLoader::load(cfg, report);
        REQUIRE(report.failures.empty());
        return registry;
    }

    // A tools/call as the decoder hands it on, for `tool` as given.
    protocol::Request request(const plugins::Tool& tool, Json arguments) {
        protocol::Request r;
        r.id = 1;
        r.method = "tools/call";
        r.principal = connection->principal();
        r.connection = connection.get();
        r.reply = out;
        r.call = decoder.target_of(registry, tool, std::move(arguments), r.principal);
        return r;
    }

    // The result as its answer carries it: one passed on as the plugin's
    // text (protocol::written_json) is read back.
    Json run(const plugins::Tool& tool, Json arguments) {
        const Json result = run_as_is(tool, std::move(arguments));
        if (const auto text = protocol::written_text(result)) return Json::parse(*text);
        return result;
    }

    Json run_as_is(const plugins::Tool& tool, Json arguments) {
        auto r = request(tool, std::move(arguments));
        return tool_call.run(r);
    }

    const plugins::Tool& tool(std::string_view name) const { return *registry->find(name); }
};

std::string refusal_code(const Json& result) {
    return result.at("structuredContent").at("code").get<std::string>();
}

} // namespace

TEST_CASE("ToolCall runs the tool of its target without looking it up again", "[tool_call]") {
    Harness h;
    // A tool the registry does not know: were it looked up by name, the call
    // would fail as unknown.
    plugins::Tool stand_in = h.tool("echo");
    stand_in.name = "echo_under_another_name";
    REQUIRE(h.registry->find(stand_in.name) == nullptr);
    const auto lookups = h.registry->lookups();
    const Json result = h.run(stand_in, {{"text", "hi"}});
    CHECK(result["structuredContent"] == Json{{"text", "hi"}});
    CHECK_FALSE(result.contains("isError"));
    CHECK(h.registry->lookups() == lookups);
}

TEST_CASE("ToolCall answers the target's scope refusal and runs nothing", "[tool_call]") {
    Harness h({}, auth::Principal{"robot", "token", "client", {"other"}, "https://issuer"});
    plugins::Tool scoped = h.tool("echo");
    scoped.scope = "echo:write";
    const Json result = h.run(scoped, {{"text", "hi"}});
    CHECK(result["isError"] == true);
    CHECK(refusal_code(result) == "INSUFFICIENT_SCOPE");
    CHECK(result["structuredContent"]["next"]["scope"] == "echo:write");
}

TEST_CASE("ToolCall checks arguments against the inputSchema after the gate, naming the pointer", "[tool_call]") {
    Harness h;
    const Json result = h.run(h.tool("echo"), {{"text", 42}});
    CHECK(result["isError"] == true);
    const std::string text = result["content"][0]["text"];
    CHECK_THAT(text, Catch::Contains("/text"));
    CHECK_THAT(text, Catch::Contains("'echo'"));
}

TEST_CASE("ToolCall stops at the first gate refusal, before the plugin", "[tool_call]") {
    Harness h;
    auto check = std::make_unique<RefuseAll>();
    RefuseAll* refuse_all = check.get();
    h.gate.add(std::move(check));
    const Json result = h.run(h.tool("echo"), {{"text", "hi"}});
    CHECK(refusal_code(result) == "NOT_GRANTED");
    CHECK(refuse_all->asked == 1);
}

TEST_CASE("ToolCall refuses a call beyond its rate limit and spends nothing else", "[tool_call]") {
    config::RateLimits rates;
    rates.per_tool["echo"] = config::RateLimit{1, 1, {}};
    Harness h(rates);
    CHECK_FALSE(h.run(h.tool("echo"), {{"text", "one"}}).contains("isError"));
    const Json second = h.run(h.tool("echo"), {{"text", "two"}});
    CHECK(refusal_code(second) == "RATE_LIMITED");
    CHECK(second["structuredContent"]["next"].contains("retryAfterMs"));
}

#ifdef GATEHOUSE_REDIS_SERVER

TEST_CASE("ToolCall refuses with STATE_UNAVAILABLE when the shared rate limits cannot be read, and runs nothing",
          "[tool_call][redis]") {
    test::RedisServer server;
    config::RateLimits rates;
    rates.per_principal = config::RateLimit{100, 100, {}};
    Harness h(rates, {.subject = "tester", .kind = "local"}, limits::make_redis_buckets(server.settings()));
    auto check = std::make_unique<RefuseAll>();
    RefuseAll* refuse_all = check.get();
    h.gate.add(std::move(check));
    CHECK(refusal_code(h.run(h.tool("echo"), {{"text", "one"}})) == "NOT_GRANTED"); // counted, then gated
    CHECK(refuse_all->asked == 1);
    server.stop();
    const Json down = h.run(h.tool("echo"), {{"text", "two"}});
    CHECK(down["isError"] == true);
    CHECK(refusal_code(down) == "STATE_UNAVAILABLE");
    CHECK(down["structuredContent"]["next"] == Json{{"action", "retry"}});
    CHECK_FALSE(down["structuredContent"]["next"].contains("retryAfterMs"));
    CHECK(refuse_all->asked == 1); // refused before the gate: nothing downstream ran
}

#endif

TEST_CASE("ToolCall refuses a string beyond max_string_bytes before the gate", "[tool_call]") {
    Harness h;
    auto check = std::make_unique<RefuseAll>();
    RefuseAll* refuse_all = check.get();
    h.gate.add(std::move(check));
    const Json result = h.run(h.tool("echo"), {{"text", std::string(2048, 'x')}});
    CHECK(refusal_code(result) == "ARGUMENT_TOO_LARGE");
    CHECK(refuse_all->asked == 0);
}

TEST_CASE("ToolCall turns what the plugin answers into a CallToolResult or a tool error", "[tool_call]") {
    Harness h;
    const Json broken = h.run(h.tool("bad_output"), Json::object());
    CHECK(broken["isError"] == true);
    CHECK_THAT(broken["content"][0]["text"].get<std::string>(), Catch::Contains("outputSchema"));

    const Json failed = h.run(h.tool("fail"), Json::object());
    CHECK(failed["isError"] == true);
    CHECK(failed["content"][0]["text"] == "No note 99: nothing was deleted.");

    const Json crashed = h.run(h.tool("crash"), Json::object());
    CHECK(crashed["isError"] == true);
    CHECK_THAT(crashed["content"][0]["text"].get<std::string>(), !Catch::Contains("/secret/path"));

    // A structured answer gets its text fallback.
    const Json echoed = h.run(h.tool("echo"), {{"text", "hi"}});
    REQUIRE(echoed["content"].is_array());
    CHECK_FALSE(echoed["content"].empty());
}

TEST_CASE("ToolCall passes a one-line result on as the plugin's text, and its tree whenever the text says more or "
          "less than the answer carries",
          "[tool_call]") {
    Harness h;
    const auto text_of = [&](std::string_view tool, Json arguments = Json::object()) {
        const Json result = h.run_as_is(h.tool(tool), std::move(arguments));
        const auto text = protocol::written_text(result);
        return text ? std::optional<std::string>(*text) : std::nullopt;
    };
    // The line's own end (as printf leaves it) is not part of the result.
    CHECK(text_of("rawjson_ok") == R"({"content":[{"type":"text","text":"fine"}]})");
    CHECK(text_of("rawjson_mirror", {{"content", Json::array()}}) == R"({"content":[]})");
    // Over several lines (one stdio message each), or a name given twice
    // (the tree keeps the last): the tree, as the checks read it.
    CHECK_FALSE(text_of("rawjson_spaced"));
    CHECK_FALSE(text_of("rawjson_repeated"));
    CHECK(h.run(h.tool("rawjson_repeated"), Json::object())["content"][0]["text"] == "last");
    // A number kept rounded (an integer past 64 bits), checked as the double
    // it was read as: that double is passed on, not digits a client may read
    // exactly.
    CHECK_FALSE(text_of("rawjson_big_integer"));
    CHECK(h.run(h.tool("rawjson_big_integer"), Json::object())["structuredContent"]["n"].is_number_float());
    // What the answer changes: a flag to drop or keep, a type to drop, a
    // _meta to merge with the server's, content to add.
    for (const Json& changed : {Json{{"content", Json::array()}, {"isError", false}},
                                Json{{"content", Json::array()}, {"resultType", "complete"}},
                                Json{{"content", Json::array()}, {"_meta", {{"example.com/a", 1}}}},
                                Json{{"structuredContent", {{"a", 1}}}}}) {
        INFO(changed.dump());
        CHECK_FALSE(text_of("rawjson_mirror", changed));
        const Json result = h.run(h.tool("rawjson_mirror"), changed);
        CHECK_FALSE(result.contains("isError"));
        CHECK_FALSE(result.contains("resultType"));
        CHECK(result["content"].is_array());
    }
}

TEST_CASE("ToolCall without a decoded target is a protocol error", "[tool_call]") {
    Harness h;
    protocol::Request r;
    r.id = 1;
    r.method = "tools/call";
    r.principal = h.connection->principal();
    r.connection = h.connection.get();
    r.reply = h.out;
    CHECK_THROWS_AS(h.tool_call.run(r), protocol::ProtocolError);
}

TEST_CASE("ToolCall decides the gate again before each later round of a 2025-11-25 call", "[tool_call]") {
    Harness h;
    auto check = std::make_unique<PassThenRefuse>(1);
    PassThenRefuse* gate_check = check.get();
    h.gate.add(std::move(check));
    auto r = h.request(h.tool("test_elicitation"), {{"message", "Who are you?"}});
    r.revision = protocol::Revision::legacy_2025_11_25;
    r.client_capabilities = {{"elicitation", Json::object()}};
    Json result;
    std::thread call([&] { result = h.tool_call.run(r); });
    // The first round passed the gate and asked the person; the answer
    // comes after the gate would say no.
    Json asked;
    for (int i = 0; i < 500 && asked.is_null(); ++i) {
        for (auto& message : h.out->take())
            if (message.value("method", "") == "elicitation/create") asked = message;
        if (asked.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE_FALSE(asked.is_null());
    CHECK(gate_check->asked == 1);
    const Json answer = {
        {"jsonrpc", "2.0"},
        {"id", asked["id"]},
        {"result", {{"action", "accept"}, {"content", {{"username", "ann"}, {"email", "ann@example.com"}}}}}};
    REQUIRE(h.connection->client_requests().deliver(answer));
    call.join();
    INFO(result.dump());
    CHECK(gate_check->asked == 2);
    CHECK(refusal_code(result) == "STORE_SWITCHED"); // the plugin's answering round never ran
}
