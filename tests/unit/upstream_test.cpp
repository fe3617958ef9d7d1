// The client side's rooms driven directly: the name hook, and a ClientSession
// over a scripted transport (negotiation, pagination, progress, cancellation,
// bounds), no server process needed.
#include "captured_log.hpp"
#include "upstream/bearer_challenge.hpp"
#include "upstream/bearer_source.hpp"
#include "upstream/client_session.hpp"
#include "upstream/http_client_transport.hpp"
#include "upstream/name_hook.hpp"
#include "upstream/stdio_client_transport.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using gatehouse::upstream::BearerChallenge;
using gatehouse::upstream::BearerSource;
using gatehouse::upstream::ClientSession;
using gatehouse::upstream::ClientTransport;
using gatehouse::upstream::HttpClientTransport;
using gatehouse::upstream::NameHook;
using gatehouse::upstream::StdioClientTransport;
using gatehouse::upstream::UpstreamUnavailable;
using Json = nlohmann::json;

namespace {

// Answers each message it is sent with what `script` returns (nothing, or
// lines to deliver), on the sender's thread; with `on_its_stream`, as over
// HTTP, what answers a request comes on that request's own stream.
class ScriptedTransport final : public ClientTransport {
public:
    using Script = std::function<std::vector<std::string>(const Json& sent)>;
    ScriptedTransport(Script script, std::vector<Json>& sent, bool on_its_stream = false)
        : script_(std::move(script)), sent_(sent), on_its_stream_(on_its_stream) {}
    void start(Events events) override { events_ = std::move(events); }
    bool send(const Json& message) override {
        const Json parsed = Json::parse(message.dump());
        {
            std::lock_guard lock(mutex_);
            sent_.push_back(parsed);
        }
        const Json stream = on_its_stream_ && parsed.contains("method") ? parsed.value("id", Json()) : Json();
        for (const auto& line : script_(parsed))
            events_.message(line, stream);
        return !closed_;
    }
    void close() override {
        if (!closed_.exchange(true)) events_.closed("closed by the test");
    }
    std::string describe() const override { return "scripted"; }
    // A message the server sends of its own accord, outside any answer, or
    // on the stream of request `stream`.
    void deliver(const std::string& line, const Json& stream = Json()) { events_.message(line, stream); }

private:
    Script script_;
    std::vector<Json>& sent_;
    const bool on_its_stream_;
    std::mutex mutex_;
    Events events_;
    std::atomic<bool> closed_{false};
};

std::string reply(const Json& to, Json result) {
    return Json{{"jsonrpc", "2.0"}, {"id", to["id"]}, {"result", std::move(result)}}.dump();
}

std::string error(const Json& to, int code, const char* message) {
    return Json{{"jsonrpc", "2.0"}, {"id", to["id"]}, {"error", {{"code", code}, {"message", message}}}}.dump();
}

std::unique_ptr<ClientSession> session_over(ScriptedTransport::Script script, std::vector<Json>& sent,
                                            ScriptedTransport** transport = nullptr) {
    ClientSession::Options options;
    options.family = "test";
    options.client_version = "9.9.9";
    options.request_timeout = std::chrono::milliseconds(2000);
    auto scripted = std::make_unique<ScriptedTransport>(std::move(script), sent);
    if (transport) *transport = scripted.get();
    return std::make_unique<ClientSession>(std::move(scripted), options);
}

std::string server_asks(const char* id, const char* method, Json params = Json::object()) {
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}.dump();
}

// The host's answer to the server's request `id`, among what it sent.
Json answer_to(const std::vector<Json>& sent, const char* id) {
    for (const auto& m : sent)
        if (!m.contains("method") && m.contains("id") && m["id"] == id) return m;
    return Json();
}

// A 2025-11-25 server: server/discover is unknown to it.
std::vector<std::string> legacy_server(const Json& m) {
    if (!m.contains("id")) return {};
    if (m["method"] == "server/discover") return {error(m, -32601, "Method not found")};
    if (m["method"] == "initialize")
        return {reply(m, {{"protocolVersion", "2025-06-18"},
                          {"capabilities", {{"tools", Json::object()}}},
                          {"serverInfo", {{"name", "old"}, {"version", "1"}}}})};
    return {error(m, -32601, "Method not found")};
}

} // namespace

namespace {
std::chrono::steady_clock::time_point in_a_minute() {
    return std::chrono::steady_clock::now() + std::chrono::minutes(1);
}
} // namespace

TEST_CASE("the name hook puts {upstream} and {name} where the pattern says", "[upstream]") {
    CHECK(NameHook("{upstream}_{name}", "mem").apply("read_graph") == "mem_read_graph");
    CHECK(NameHook("{name}", "mem").apply("read_graph") == "read_graph");
    CHECK(NameHook("{name}.{upstream}", "mem").apply("x") == "x.mem");
    CHECK(NameHook("a-{name}", "mem").apply("{upstream}") == "a-{upstream}"); // a name is not a pattern
    // What a call of a tool not listed yet is told: the hook's fixed text decides.
    CHECK(NameHook("{upstream}_{name}", "mem").could_have_named("mem_read_graph"));
    CHECK_FALSE(NameHook("{upstream}_{name}", "mem").could_have_named("mem_"));
    CHECK_FALSE(NameHook("{upstream}_{name}", "mem").could_have_named("memo_read"));
    CHECK(NameHook("{name}.{upstream}", "mem").could_have_named("x.mem"));
    CHECK_FALSE(NameHook("{name}.{upstream}", "mem").could_have_named("x.men"));
    CHECK_FALSE(NameHook("{name}", "mem").could_have_named("anything")); // "none" claims no name
}

TEST_CASE("a 2025-11-25 server is asked server/discover, then initialize, and told initialized", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(legacy_server, sent);
    session->open(std::chrono::milliseconds(2000));
    CHECK(session->protocol_version() == "2025-06-18");
    CHECK_FALSE(session->stateless());
    CHECK(session->server_info()["name"] == "old");
    REQUIRE(sent.size() == 3);
    CHECK(sent[0]["method"] == "server/discover");
    CHECK(sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
    CHECK(sent[1]["method"] == "initialize");
    CHECK(sent[1]["params"]["clientInfo"]["version"] == "9.9.9");
    CHECK_FALSE(sent[1]["params"].contains("_meta"));
    // What the host relays to its agents, declared once for the session.
    CHECK(sent[1]["params"]["capabilities"]["elicitation"].contains("form"));
    CHECK(sent[1]["params"]["capabilities"]["elicitation"].contains("url"));
    CHECK(sent[1]["params"]["capabilities"]["sampling"].is_object());
    CHECK(sent[1]["params"]["capabilities"]["roots"].is_object());
    CHECK(sent[2]["method"] == "notifications/initialized");
}

TEST_CASE("a 2026-07-28 server: no initialize, and every request carries the revision's _meta", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(
        [](const Json& m) -> std::vector<std::string> {
            if (m["method"] == "server/discover")
                return {reply(m, {{"supportedVersions", {"2025-11-25", "2026-07-28"}},
                                  {"capabilities", {{"tools", Json::object()}}},
                                  {"_meta", {{"io.modelcontextprotocol/serverInfo", {{"name", "new"}}}}}})};
            return {reply(m, {{"tools", Json::array()}, {"resultType", "complete"}})};
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    CHECK(session->protocol_version() == "2026-07-28");
    CHECK(session->server_info()["name"] == "new");
    session->list_all("tools/list", "tools", in_a_minute());
    REQUIRE(sent.size() == 2);
    CHECK(sent[1]["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] == "gatehouse");
}

TEST_CASE("a request's own _meta members stay beside those the host writes, which stand over theirs", "[upstream]") {
    for (const bool modern : {true, false}) {
        CAPTURE(modern);
        std::vector<Json> sent;
        auto session = session_over(
            [&](const Json& m) -> std::vector<std::string> {
                if (m["method"] == "server/discover" && modern)
                    return {reply(m, {{"supportedVersions", {"2026-07-28"}}, {"capabilities", Json::object()}})};
                if (m["method"] == "tools/call") return {reply(m, {{"content", Json::array()}})};
                return legacy_server(m);
            },
            sent);
        session->open(std::chrono::milliseconds(2000));
        const Json params = {{"name", "say \"hi\"\n"},
                             {"arguments", {{"text", "é\u0001"}, {"n", 2}}},
                             {"_meta",
                              {{"trace", "t-1"},
                               {"progressToken", "theirs"},
                               {"io.modelcontextprotocol/protocolVersion", "1999-01-01"}}}};
        ClientSession::Waiting waiting;
        waiting.progress = [](const Json&) {};
        waiting.capabilities = {{"elicitation", {{"form", Json::object()}}}};
        session->call("tools/call", params, waiting);
        const Json& call = sent.back();
        CHECK(call["jsonrpc"] == "2.0");
        CHECK(call["method"] == "tools/call");
        CHECK(call["params"]["name"] == params["name"]);
        CHECK(call["params"]["arguments"] == params["arguments"]);
        const Json& meta = call["params"]["_meta"];
        CHECK(meta["trace"] == "t-1");
        CHECK(meta["progressToken"] == call["id"]);
        if (modern) {
            CHECK(meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
            CHECK(meta["io.modelcontextprotocol/clientInfo"] == Json{{"name", "gatehouse"}, {"version", "9.9.9"}});
            CHECK(meta["io.modelcontextprotocol/clientCapabilities"] == waiting.capabilities);
            CHECK(meta.size() == 5);
        } else {
            CHECK(meta["io.modelcontextprotocol/protocolVersion"] == "1999-01-01");
            CHECK(meta.size() == 3);
        }
        // Without progress, a 2025-11-25 request's params go as they are; a
        // 2026-07-28 one's params that are none become an object with _meta.
        session->call("tools/call", Json(), ClientSession::Waiting{});
        if (modern)
            CHECK(sent.back()["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == Json::object());
        else
            CHECK(sent.back()["params"].is_null());
    }
}

TEST_CASE("a listing ends at its deadline, however each page keeps within its own", "[upstream]") {
    std::vector<Json> sent;
    std::size_t pages = 0;
    auto session = session_over(
        [&](const Json& m) -> std::vector<std::string> {
            if (m["method"] != "tools/list") return legacy_server(m);
            std::this_thread::sleep_for(std::chrono::milliseconds(50)); // each page in time, on and on
            ++pages;
            return {reply(
                m, {{"tools", {{{"name", "t" + std::to_string(pages)}}}}, {"nextCursor", std::to_string(pages)}})};
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    const auto started = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(session->list_all("tools/list", "tools", started + std::chrono::milliseconds(500)),
                      Catch::Contains("tools/list was not listed whole in time"));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
    CHECK(pages < 100);
}

TEST_CASE("lists are followed page by page, and a cursor that leads nowhere is refused", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(
        [](const Json& m) -> std::vector<std::string> {
            if (m["method"] != "tools/list") return legacy_server(m);
            const std::string cursor = m["params"].value("cursor", "");
            if (cursor.empty()) return {reply(m, {{"tools", {{{"name", "a"}}}}, {"nextCursor", "2"}})};
            if (cursor == "2") return {reply(m, {{"tools", {{{"name", "b"}}}}, {"nextCursor", "3"}})};
            return {reply(m, {{"tools", {{{"name", "c"}}}}, {"nextCursor", "3"}})}; // the same cursor again
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    CHECK_THROWS_WITH(session->list_all("tools/list", "tools", in_a_minute()),
                      Catch::Contains("a nextCursor that leads nowhere"));
}

TEST_CASE("a server that pages on without end is refused once its pages pass the listing's bytes", "[upstream]") {
    std::vector<Json> sent;
    std::size_t pages = 0;
    const std::string description(1 << 20, 'x'); // each page well under a message's bound
    auto session = session_over(
        [&](const Json& m) -> std::vector<std::string> {
            if (m["method"] != "tools/list") return legacy_server(m);
            ++pages;
            return {reply(m, {{"tools", {{{"name", "t" + std::to_string(pages)}, {"description", description}}}},
                              {"nextCursor", std::to_string(pages)}})};
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    CHECK_THROWS_WITH(session->list_all("tools/list", "tools", in_a_minute()), Catch::Contains("went on past 32 MiB"));
    CHECK(pages > 30);
    CHECK(pages < 40); // the bound is the bytes, long before the pages' count
}

TEST_CASE("progress reaches the request's own handler; a cancelled request tells the server", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(
        [](const Json& m) -> std::vector<std::string> {
            if (m["method"] != "tools/call") return legacy_server(m);
            const Json token = m["params"]["_meta"]["progressToken"];
            const auto progress = [&](int n) {
                return Json{{"jsonrpc", "2.0"},
                            {"method", "notifications/progress"},
                            {"params", {{"progressToken", token}, {"progress", n}}}}
                    .dump();
            };
            if (m["params"]["name"] == "slow") return {progress(1), progress(2)}; // and never an answer
            return {progress(1), std::string(100, '['), reply(m, {{"content", Json::array()}})};
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    std::vector<double> seen;
    ClientSession::Waiting waiting;
    waiting.progress = [&](const Json& p) { seen.push_back(p["progress"].get<double>()); };
    session->request("tools/call", {{"name", "quick"}}, waiting);
    CHECK(seen == std::vector<double>{1}); // the line nested 100 deep was dropped, unread

    std::atomic<int> polls{0};
    waiting.cancelled = [&] { return ++polls > 3; };
    CHECK_THROWS_AS(session->request("tools/call", {{"name", "slow"}}, waiting), gatehouse::upstream::RequestCancelled);
    const Json& last = sent.back();
    CHECK(last["method"] == "notifications/cancelled");
    CHECK(last["params"]["requestId"] == sent[sent.size() - 2]["id"]);
}

TEST_CASE("a server's JSON-RPC error is an UpstreamError, a closed connection UpstreamUnavailable", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(legacy_server, sent);
    session->open(std::chrono::milliseconds(2000));
    try {
        session->request("prompts/list", Json::object());
        FAIL("no error");
    } catch (const gatehouse::upstream::UpstreamError& e) {
        CHECK(e.code == -32601);
    }
    session->close();
    CHECK_FALSE(session->alive());
    CHECK_THROWS_AS(session->request("tools/list", Json::object()), gatehouse::upstream::UpstreamUnavailable);
}

TEST_CASE("a server's error message is quoted as one line of at most 1 KiB, however long and however broken",
          "[upstream]") {
    std::vector<Json> sent;
    const std::string huge = "first line\nforged: [error] host compromised\n" + std::string(1 << 20, 'x');
    auto session = session_over(
        [&](const Json& m) -> std::vector<std::string> {
            if (m.contains("id") && m["method"] == "tools/list")
                return {
                    Json{{"jsonrpc", "2.0"}, {"id", m["id"]}, {"error", {{"code", -32000}, {"message", huge}}}}.dump()};
            return legacy_server(m);
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    try {
        session->request("tools/list", Json::object());
        FAIL("no error");
    } catch (const gatehouse::upstream::UpstreamError& e) {
        const std::string what = e.what();
        CHECK(what.size() < 1200);
        CHECK(what.find('\n') == std::string::npos);
        CHECK_THAT(what, Catch::Contains("first line forged"));
    }
}

TEST_CASE("what a server asks during a call is handed back open, and its answer lets the call finish", "[upstream]") {
    std::vector<Json> sent;
    Json call;
    auto session = session_over(
        [&](const Json& m) -> std::vector<std::string> {
            if (!m.contains("method")) { // the host's answer to what the server asked
                if (m["id"] == "e1")
                    return {reply(call, {{"content", {{{"type", "text"}, {"text", m["result"]["content"]["name"]}}}}})};
                return {};
            }
            if (m["method"] == "tools/call") {
                call = m;
                return {server_asks("e1", "elicitation/create", {{"message", "Your name?"}})};
            }
            return legacy_server(m);
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    ClientSession::Waiting waiting;
    waiting.relays = true;
    auto first = session->call("tools/call", {{"name", "greet"}}, waiting);
    REQUIRE(first.asked.size() == 1);
    CHECK(first.asked[0].id == "e1");
    CHECK(first.asked[0].method == "elicitation/create");
    CHECK(Json::parse(first.asked[0].params)["message"] == "Your name?");
    session->answer(first.asked[0].id, {{"action", "accept"}, {"content", {{"name", "Ada"}}}});
    auto done = session->resume(first.id, waiting);
    CHECK(done.asked.empty());
    CHECK(done.result["content"][0]["text"] == "Ada");
    CHECK_THROWS_AS(session->resume(first.id, waiting), gatehouse::upstream::UpstreamUnavailable); // no longer open
}

TEST_CASE("asks held for the agents are bounded in bytes over every call; one past the bound is refused at once",
          "[upstream]") {
    std::vector<Json> sent;
    const std::string words(400, 'w');
    ClientSession::Options options;
    options.family = "test";
    options.request_timeout = std::chrono::milliseconds(2000);
    options.max_held_ask_bytes = 1000; // two asks of some 480 bytes, not three
    ScriptedTransport* transport = nullptr;
    auto scripted = std::make_unique<ScriptedTransport>(
        [&](const Json& m) -> std::vector<std::string> {
            if (!m.contains("method")) return {};
            if (m["method"] == "tools/call" && m["params"]["name"] == "a")
                return {server_asks("a1", "elicitation/create", {{"message", words}})};
            if (m["method"] == "tools/call")
                return {server_asks("b1", "elicitation/create", {{"message", words}}),
                        server_asks("b2", "elicitation/create", {{"message", words}})};
            return legacy_server(m);
        },
        sent, true);
    transport = scripted.get();
    auto session = std::make_unique<ClientSession>(std::move(scripted), options);
    session->open(std::chrono::milliseconds(2000));
    ClientSession::Waiting waiting;
    waiting.relays = true;
    // Call a asks once (handed back), then once more while its agent is away: held.
    auto a = session->call("tools/call", {{"name", "a"}}, waiting);
    REQUIRE(a.asked.size() == 1);
    transport->deliver(server_asks("a2", "elicitation/create", {{"message", words}}), a.id);
    CHECK(answer_to(sent, "a2").is_null());
    // Call b's asks count with a's held one: the first fits, the second not.
    auto b = session->call("tools/call", {{"name", "b"}}, waiting);
    REQUIRE(b.asked.size() == 1);
    CHECK(b.asked[0].id == "b1");
    CHECK(answer_to(sent, "b1").is_null()); // held for the agent
    CHECK(answer_to(sent, "b2")["error"]["code"] == -32603);
    CHECK_THAT(answer_to(sent, "b2")["error"]["message"].get<std::string>(),
               Catch::Contains("the asks waiting to be handed to agents hold") &&
                   Catch::Contains("would pass the 1000 the host keeps"));
    session->abandon(a.id, "done with the test");
    session->abandon(b.id, "done with the test");
}

TEST_CASE("a call that does not relay refuses what its server asks; roots outside a call are none", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(
        [&](const Json& m) -> std::vector<std::string> {
            if (!m.contains("method")) return {};
            if (m["method"] == "tools/list")
                return {server_asks("r1", "roots/list"), server_asks("e1", "elicitation/create"),
                        server_asks("s1", "sampling/createMessage", {{"messages", Json::array()}}),
                        server_asks("x1", "tasks/list"), reply(m, {{"tools", Json::array()}})};
            return legacy_server(m);
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    session->list_all("tools/list", "tools", in_a_minute());
    CHECK(answer_to(sent, "r1")["result"]["roots"] == Json::array());
    CHECK(answer_to(sent, "e1")["error"]["code"] == -32603);
    CHECK_THAT(answer_to(sent, "e1")["error"]["message"].get<std::string>(),
               Catch::Contains("not asked during a call of the host's that an agent can answer"));
    CHECK(answer_to(sent, "s1")["error"]["code"] == -32603);
    CHECK(answer_to(sent, "x1")["error"]["code"] == -32601);
}

TEST_CASE("a server that asks without end outside any call is refused each time, and the log hears a burst of it",
          "[upstream]") {
    std::vector<Json> sent;
    ScriptedTransport* transport = nullptr;
    auto session =
        session_over([](const Json& m) { return m.contains("method") ? legacy_server(m) : std::vector<std::string>{}; },
                     sent, &transport);
    session->open(std::chrono::milliseconds(2000));
    gatehouse::test::CapturedLog log;
    constexpr int kAsks = 2000;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < kAsks; ++i)
        transport->deliver(server_asks(("e" + std::to_string(i)).c_str(), "elicitation/create"));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(answer_to(sent, "e0")["error"]["code"] == -32603);
    CHECK(answer_to(sent, "e1999")["error"]["code"] == -32603); // every one answered
    const auto logged = log.count("[test] asked elicitation/create, which was refused");
    CHECK(logged >= 1);
    CHECK(logged <=
          gatehouse::metrics::LogAllowance::kBurst + gatehouse::metrics::LogAllowance::kPerSecond * seconds + 1);
    CHECK(log.count("[test] writes more than 50 lines a second into the host's log") >= 1);
}

// A 2025-11-25 server over a transport that cannot tell which call an ask
// belongs to, that never answers a tools/call; `calls` counts those sent.
std::unique_ptr<ClientSession> session_never_answering_calls(std::vector<Json>& sent, ScriptedTransport*& transport,
                                                             std::atomic<int>& calls) {
    return session_over(
        [counted = &calls](const Json& m) -> std::vector<std::string> {
            if (m.contains("method") && m["method"] == "tools/call") {
                ++*counted;
                return {};
            }
            if (!m.contains("method")) return {};
            return legacy_server(m);
        },
        sent, &transport);
}

TEST_CASE("over a transport that cannot tell, an ask with two relaying calls in flight goes to neither", "[upstream]") {
    std::vector<Json> sent;
    ScriptedTransport* transport = nullptr;
    std::atomic<int> calls{0};
    auto session = session_never_answering_calls(sent, transport, calls);
    session->open(std::chrono::milliseconds(2000));
    ClientSession::Waiting waiting;
    waiting.relays = true;
    waiting.timeout = std::chrono::milliseconds(1500);
    std::atomic<int> handed_back{0};
    const auto one = [&] {
        try {
            if (!session->call("tools/call", {{"name", "hold"}}, waiting).asked.empty()) ++handed_back;
        } catch (const gatehouse::upstream::UpstreamUnavailable&) {
        }
    };
    std::thread a(one), b(one);
    while (calls < 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    transport->deliver(server_asks("e1", "elicitation/create", {{"message", "whose?"}}));
    a.join();
    b.join();
    CHECK(handed_back == 0);
    CHECK(answer_to(sent, "e1")["error"]["code"] == -32603);
    CHECK_THAT(answer_to(sent, "e1")["error"]["message"].get<std::string>(), Catch::Contains("several calls"));
}

TEST_CASE("over a transport that cannot tell, an ask that may be another agent's goes to no one; one agent's own "
          "calls still get theirs",
          "[upstream]") {
    std::vector<Json> sent;
    ScriptedTransport* transport = nullptr;
    std::atomic<int> calls{0};
    auto session = session_never_answering_calls(sent, transport, calls);
    session->open(std::chrono::milliseconds(2000));
    const auto waiting_for = [](std::string owner, int ms) {
        ClientSession::Waiting waiting;
        waiting.relays = true;
        waiting.owner = std::move(owner);
        waiting.timeout = std::chrono::milliseconds(ms);
        return waiting;
    };
    // Alice's call times out; the server may still be running it (for as
    // long again as the host waited).
    CHECK_THROWS_AS(session->call("tools/call", {{"name", "hold"}}, waiting_for("alice", 1000)),
                    gatehouse::upstream::UpstreamUnavailable);
    // Bob's call is the only one in flight when an ask comes: it may be
    // Alice's, so Bob never sees it.
    const auto ask_during = [&](const std::string& owner, const std::string& ask_id) {
        std::atomic<bool> handed_back{false}, returned{false};
        const int before = calls;
        std::thread call([&] {
            try {
                handed_back = !session->call("tools/call", {{"name", "hold"}}, waiting_for(owner, 1500)).asked.empty();
            } catch (const gatehouse::upstream::UpstreamUnavailable&) {
            }
            returned = true;
        });
        while (calls == before)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        transport->deliver(
            server_asks(ask_id.c_str(), "elicitation/create", {{"message", "the secret of whoever asked"}}));
        // Then the call is answered if it still waits (the ask was refused),
        // so it ends settled: the server works on nothing of its caller's.
        for (int i = 0; i < 100 && !returned; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        // (The call sent nothing since its tools/call, and the refusal went
        // out on this thread: `sent` is still.)
        std::int64_t id = 0;
        for (const auto& m : sent)
            if (m.value("method", "") == "tools/call") id = m["id"].get<std::int64_t>();
        transport->deliver(Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", {{"content", Json::array()}}}}.dump());
        call.join();
        return handed_back.load();
    };
    CHECK_FALSE(ask_during("bob", "e1"));
    CHECK_THAT(answer_to(sent, "e1")["error"]["message"].get<std::string>(),
               Catch::Contains("another agent's request may be running"));
    // Alice's next call may be handed what her earlier one asked: it is hers.
    CHECK(ask_during("alice", "e2"));
}

TEST_CASE("an open call abandoned: the server hears it was cancelled, and what it asked is refused", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(
        [&](const Json& m) -> std::vector<std::string> {
            if (!m.contains("method")) return {};
            if (m["method"] == "tools/call")
                return {server_asks("e1", "elicitation/create"), server_asks("e2", "sampling/createMessage")};
            return legacy_server(m);
        },
        sent);
    session->open(std::chrono::milliseconds(2000));
    ClientSession::Waiting waiting;
    waiting.relays = true;
    auto first = session->call("tools/call", {{"name", "ask"}}, waiting);
    REQUIRE_FALSE(first.asked.empty());
    session->abandon(first.id, "the agent did not answer");
    bool cancelled = false;
    for (const auto& m : sent)
        if (m.value("method", "") == "notifications/cancelled" && m["params"]["requestId"] == first.id)
            cancelled = true;
    CHECK(cancelled);
    // An ask still queued when the call was abandoned is refused by the session itself.
    if (first.asked.size() == 1) CHECK(answer_to(sent, "e2")["error"]["message"] == "the agent did not answer");
    CHECK_THROWS_AS(session->resume(first.id, waiting), gatehouse::upstream::UpstreamUnavailable);
}

TEST_CASE("an upstream URL: host, port and target read; what a request cannot carry refused", "[upstream]") {
    using gatehouse::upstream::HttpUrl;
    const auto plain = HttpUrl::parse("http://127.0.0.1:3001/mcp?x=1#frag");
    CHECK(plain.host == "127.0.0.1");
    CHECK(plain.port == "3001");
    CHECK(plain.target == "/mcp?x=1");
    CHECK(plain.host_header == "127.0.0.1:3001");
    const auto v6 = HttpUrl::parse("http://[::1]:8080");
    CHECK(v6.host == "::1");
    CHECK(v6.port == "8080");
    CHECK(v6.target == "/");
    CHECK(HttpUrl::parse("http://example.org/mcp").port == "80");
    const auto secure = HttpUrl::parse("https://h/mcp");
    CHECK(secure.tls);
    CHECK(secure.port == "443");
    CHECK_FALSE(plain.tls);
    CHECK_THROWS_WITH(HttpUrl::parse("ftp://h/mcp"), Catch::Contains("is not an http:// or https:// URL"));
    CHECK_THROWS_WITH(HttpUrl::parse("http://user:pw@h/mcp"), Catch::Contains("credentials in it"));
    CHECK_THROWS_WITH(HttpUrl::parse("http://h:99999999/"), Catch::Contains("no valid port"));
    CHECK_THROWS_WITH(HttpUrl::parse("http://h/a b"), Catch::Contains("a path a request line cannot carry"));
    CHECK_THROWS_WITH(HttpUrl::parse("http://:80/"), Catch::Contains("names no host"));
    // A key in the query stays out of what the log shows.
    CHECK(gatehouse::upstream::shown_url("http://h/mcp?key=s3cret") == "http://h/mcp?…");
    CHECK(gatehouse::upstream::shown_url("http://h/mcp") == "http://h/mcp");
    CHECK_THROWS_WITH(HttpUrl::parse("http://:80/?key=s3cret"), !Catch::Contains("s3cret"));
}

TEST_CASE("a WWW-Authenticate header: the Bearer challenge's error, scope and resource_metadata", "[upstream]") {
    const auto plain =
        BearerChallenge::parse(R"(Bearer error="insufficient_scope", scope="files:read files:write", )"
                               R"(resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp")");
    CHECK(plain.error == "insufficient_scope");
    CHECK(plain.scope == "files:read files:write");
    CHECK(plain.resource_metadata == "https://mcp.example/.well-known/oauth-protected-resource/mcp");
    // Another scheme's parameters are not the Bearer challenge's, whichever comes first.
    const auto mixed =
        BearerChallenge::parse(R"(Basic realm="x", error="basic's", Bearer realm="y", error=invalid_token)");
    CHECK(mixed.error == "invalid_token");
    const auto after = BearerChallenge::parse(R"(Bearer scope="a", Negotiate abc==, DPoP error="no")");
    CHECK(after.scope == "a");
    CHECK(after.error.empty());
    CHECK(BearerChallenge::parse(R"(Basic, Bearer error=x)").error == "x");
    // Escapes in a quoted string; the scheme's name in any case.
    CHECK(BearerChallenge::parse(R"(bearer scope="say \"hi\"")").scope == R"(say "hi")");
    // What does not parse, or runs long, gives nothing.
    CHECK(BearerChallenge::parse(R"(Bearer scope="unclosed)").scope.empty());
    CHECK(BearerChallenge::parse("Bearer scope=\"" + std::string(5000, 'a') + "\"").scope.empty());
    CHECK(BearerChallenge::parse("").error.empty());
    CHECK(BearerChallenge::parse("=,=,\"").error.empty());
    // An unquoted URL is not read as its scheme.
    CHECK(BearerChallenge::parse("Bearer resource_metadata=https://h/x").resource_metadata.empty());
}

TEST_CASE("a 2026-07-28 server is asked by subscriptions/listen for the lists it can change; its end is known",
          "[upstream]") {
    std::vector<Json> sent;
    const auto discover = [](const Json& m) -> std::vector<std::string> {
        if (m["method"] == "server/discover")
            return {reply(m, {{"supportedVersions", {"2026-07-28"}},
                              {"capabilities",
                               {{"tools", {{"listChanged", true}}},
                                {"prompts", {{"listChanged", false}}},
                                {"resources", {{"listChanged", "yes"}}}}}})};
        return {};
    };
    auto scripted = std::make_unique<ScriptedTransport>(discover, sent);
    ScriptedTransport* transport = scripted.get();
    std::vector<std::string> changed;
    ClientSession::Options options;
    options.family = "test";
    ClientSession session(std::move(scripted), options, [&](const std::string& m) { changed.push_back(m); });
    session.open(std::chrono::milliseconds(2000));
    CHECK(session.listening() == ClientSession::Listening::no);
    session.listen();
    REQUIRE(sent.size() == 2);
    const Json listen = sent[1];
    CHECK(listen["method"] == "subscriptions/listen");
    // Only a boolean true counts as a list that can change.
    CHECK(listen["params"]["notifications"] == Json{{"toolsListChanged", true}});
    CHECK(listen["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
    CHECK(session.listening() == ClientSession::Listening::open);
    session.listen(); // one at a time
    CHECK(sent.size() == 2);

    const Json tag = {{"io.modelcontextprotocol/subscriptionId", listen["id"]}};
    transport->deliver(Json{{"jsonrpc", "2.0"},
                            {"method", "notifications/subscriptions/acknowledged"},
                            {"params", {{"notifications", {{"toolsListChanged", true}}}, {"_meta", tag}}}}
                           .dump());
    transport->deliver(
        Json{{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}, {"params", {{"_meta", tag}}}}.dump());
    CHECK(changed == std::vector<std::string>{"notifications/tools/list_changed"});

    // The server ends it: worth asking again.
    transport->deliver(reply(listen, {{"resultType", "complete"}, {"_meta", tag}}));
    CHECK(session.listening() == ClientSession::Listening::ended);
    session.listen();
    REQUIRE(sent.size() == 3);
    CHECK(sent[2]["id"] != listen["id"]);

    // A server that does not know it is not asked again.
    transport->deliver(error(sent[2], -32601, "Method not found"));
    CHECK(session.listening() == ClientSession::Listening::refused);
    session.listen();
    CHECK(sent.size() == 3);
}

TEST_CASE("a 2025-11-25 server sends its changes unasked: nothing is opened for them", "[upstream]") {
    std::vector<Json> sent;
    auto session = session_over(legacy_server, sent);
    session->open(std::chrono::milliseconds(2000));
    const auto before = sent.size();
    session->listen();
    CHECK(sent.size() == before);
    CHECK(session->listening() == ClientSession::Listening::no);
}

namespace {

// A 2026-07-28 server over stdio, in sh: answers each request with
// {"echo": its id}; tool "before" says its tools changed just ahead of its
// answer, "later" that its prompts changed 100 ms after; "quit" exits
// unanswered; "mistyped" sends messages whose "jsonrpc" is no text first.
constexpr const char* kShellServer = R"sh(while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  case "$line" in
    *'"server/discover"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}\n' "$id" ;;
    *'"before"'*) printf '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n{"jsonrpc":"2.0","id":%s,"result":{"echo":%s}}\n' "$id" "$id" ;;
    *'"later"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"echo":%s}}\n' "$id" "$id"; sleep 0.1; printf '{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}\n' ;;
    *'"quit"'*) exit 0 ;;
    *'"mistyped"'*) printf '{"jsonrpc":2,"method":"x"}\n{"jsonrpc":null,"id":%s}\n{"jsonrpc":["2.0"],"id":%s,"result":{}}\n{"jsonrpc":"2.0","id":%s,"result":{"echo":%s}}\n' "$id" "$id" "$id" "$id" ;;
    *) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"result":{"echo":%s}}\n' "$id" "$id" ;;
  esac
done)sh";

struct Heard {
    std::mutex mutex;
    std::vector<std::pair<std::string, std::thread::id>> changes;

    std::optional<std::thread::id> on_thread_of(const std::string& method) {
        for (int i = 0; i < 300; ++i) {
            {
                std::lock_guard lock(mutex);
                for (const auto& [m, thread] : changes)
                    if (m == method) return thread;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return std::nullopt;
    }
};

std::unique_ptr<ClientSession> shell_session(Heard& heard) {
    StdioClientTransport::Options transport;
    transport.family = "shell";
    transport.command = {"/bin/sh", "-c", kShellServer};
    ClientSession::Options options;
    options.family = "shell";
    options.request_timeout = std::chrono::milliseconds(5000);
    auto session = std::make_unique<ClientSession>(std::make_unique<StdioClientTransport>(transport), options,
                                                   [&heard](const std::string& method) {
                                                       std::lock_guard lock(heard.mutex);
                                                       heard.changes.emplace_back(method, std::this_thread::get_id());
                                                   });
    session->open(std::chrono::milliseconds(5000));
    return session;
}

Json call_tool(ClientSession& session, const char* name) {
    return session.request("tools/call", {{"name", name}, {"arguments", Json::object()}});
}

} // namespace

TEST_CASE("over stdio a request waiting alone reads its own answer; what the server says unasked is still heard",
          "[upstream]") {
    Heard heard;
    auto session = shell_session(heard);
    CHECK(session->protocol_version() == "2026-07-28");
    // What arrives while this thread reads for its answer is delivered on it.
    CHECK(call_tool(*session, "before").contains("echo"));
    const auto during = heard.on_thread_of("notifications/tools/list_changed");
    REQUIRE(during);
    CHECK(*during == std::this_thread::get_id());
    // Said after the answer, with no request waiting: the transport's own thread hears it.
    CHECK(call_tool(*session, "later").contains("echo"));
    const auto after = heard.on_thread_of("notifications/prompts/list_changed");
    REQUIRE(after);
    CHECK(*after != std::this_thread::get_id());
    // And a caller reads again after that thread has read.
    CHECK(call_tool(*session, "plain").contains("echo"));
}

TEST_CASE("over stdio requests from several threads at once each get their own answer", "[upstream]") {
    Heard heard;
    auto session = shell_session(heard);
    std::atomic<int> matched{0}, mismatched{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([&] {
            for (int i = 0; i < 25; ++i) {
                const auto reply = session->call("tools/call", {{"name", "plain"}}, ClientSession::Waiting{});
                (reply.result.value("echo", std::int64_t(-1)) == reply.id ? matched : mismatched)++;
                // Now and then alone, now and then not: the reading moves between callers and the own thread.
                if (i % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(7));
            }
        });
    for (auto& caller : callers)
        caller.join();
    CHECK(matched == 100);
    CHECK(mismatched == 0);
}

TEST_CASE("over stdio a server that exits while its caller reads: the call is told, the session ends", "[upstream]") {
    Heard heard;
    auto session = shell_session(heard);
    const auto began = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(call_tool(*session, "quit"), UpstreamUnavailable);
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(4));
    CHECK_FALSE(session->alive());
    CHECK_THAT(session->why_closed(), Catch::Matchers::Contains("exited with status 0"));
}

TEST_CASE("over stdio a server's message whose jsonrpc is no text is dropped; the reading and the session go on",
          "[upstream]") {
    Heard heard;
    auto session = shell_session(heard);
    // Read by the waiting caller, then by the transport's own thread.
    CHECK(call_tool(*session, "mistyped").contains("echo"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(call_tool(*session, "plain").contains("echo"));
    CHECK(session->alive());
}

TEST_CASE("a message whose jsonrpc member is a number, null or a list is not JSON-RPC, and never throws",
          "[upstream]") {
    std::vector<Json> sent;
    ScriptedTransport* transport = nullptr;
    auto session = session_over(legacy_server, sent, &transport);
    session->open(std::chrono::milliseconds(2000));
    for (const char* line :
         {R"({"jsonrpc":2,"method":"notifications/tools/list_changed"})", R"({"jsonrpc":null,"id":1,"result":{}})",
          R"({"jsonrpc":["2.0"],"id":"a","method":"ping"})"})
        CHECK_NOTHROW(transport->deliver(line));
    CHECK(session->alive());
    CHECK(answer_to(sent, "a").is_null());
}

namespace {

// A credential that cannot be had, for a reason quoting bytes that are not UTF-8.
class BrokenBearer final : public BearerSource {
public:
    std::string current() override { throw std::runtime_error("no token: the server said \xff\xfe"); }
    bool refused(const std::string&, const BearerChallenge&) override { return false; }
};

} // namespace

TEST_CASE("over HTTP a request refused for want of a token is answered with the reason, bytes that are not UTF-8 "
          "replaced",
          "[upstream]") {
    HttpClientTransport::Options options;
    options.family = "broken";
    options.url = "http://127.0.0.1:9/mcp"; // never reached: the token is wanted first
    options.bearer = std::make_shared<BrokenBearer>();
    HttpClientTransport transport(options);
    std::mutex mutex;
    std::condition_variable arrived;
    std::vector<std::string> messages;
    transport.start({[&](std::string_view message, const Json&) {
                         std::lock_guard lock(mutex);
                         messages.emplace_back(message);
                         arrived.notify_all();
                         return true;
                     },
                     [](const std::string&) {}});
    REQUIRE(transport.send(Json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/list"}}));
    std::unique_lock lock(mutex);
    REQUIRE(arrived.wait_for(lock, std::chrono::seconds(5), [&] { return !messages.empty(); }));
    const Json answer = Json::parse(messages.front());
    CHECK(answer["id"] == 7);
    CHECK_THAT(answer["error"]["message"].get<std::string>(), Catch::Matchers::Contains("no token"));
    lock.unlock();
    transport.close();
}

namespace {

// A loopback server for one connection: reads a request's head (and its
// body, by Content-Length), then lets `answer` write what it will; what
// `answer` returns is the test's to read.
class OneConnection {
public:
    explicit OneConnection(std::function<std::size_t(int client)> answer) : answer_(std::move(answer)) {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(listener_, 1) == 0);
        socklen_t length = sizeof address;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~OneConnection() {
        ::shutdown(listener_, SHUT_RDWR);
        thread_.join();
        ::close(listener_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
    std::size_t result() {
        std::unique_lock lock(mutex_);
        done_.wait_for(lock, std::chrono::seconds(20), [&] { return finished_; });
        return result_;
    }

private:
    void serve() {
        const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        std::size_t result = 0;
        if (client >= 0) {
            std::string head;
            char in[4096];
            std::size_t end;
            while ((end = head.find("\r\n\r\n")) == std::string::npos) {
                const ssize_t n = ::read(client, in, sizeof in);
                if (n <= 0) break;
                head.append(in, static_cast<std::size_t>(n));
            }
            const auto length_at = head.find("Content-Length: ");
            const std::size_t body = length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 16));
            while (end != std::string::npos && head.size() < end + 4 + body) {
                const ssize_t n = ::read(client, in, sizeof in);
                if (n <= 0) break;
                head.append(in, static_cast<std::size_t>(n));
            }
            result = answer_(client);
            ::close(client);
        }
        std::lock_guard lock(mutex_);
        result_ = result;
        finished_ = true;
        done_.notify_all();
    }
    std::function<std::size_t(int)> answer_;
    int listener_ = -1;
    unsigned short port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable done_;
    std::size_t result_ = 0;
    bool finished_ = false;
};

// 200 and a chunked body whose first chunk-size line never ends, at most
// 64 MiB of it; how many bytes got written.
std::size_t endless_chunk_line(int client) {
    const std::string start = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n1;";
    (void)!::send(client, start.data(), start.size(), MSG_NOSIGNAL);
    const std::string more(64 * 1024, 'a');
    std::size_t written = 0;
    while (written < (64u << 20)) {
        const ssize_t n = ::send(client, more.data(), more.size(), MSG_NOSIGNAL);
        if (n <= 0) break;
        written += static_cast<std::size_t>(n);
    }
    return written;
}

// The answer to request 5 as an event on its stream, and the stream kept
// open: 1 when the client ended the connection within 10 s.
std::size_t answers_then_holds(int client) {
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                               "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n";
    (void)!::send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
    timeval wait{10, 0};
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char in[256];
    return ::read(client, in, sizeof in) == 0 ? 1 : 0;
}

// A transport to `url` whose messages are kept.
struct Received {
    std::mutex mutex;
    std::vector<std::string> messages;
    ClientTransport::Events events() {
        return {[this](std::string_view message, const Json&) {
                    std::lock_guard lock(mutex);
                    messages.emplace_back(message);
                    return message.find("\"id\":5") != std::string_view::npos;
                },
                [](const std::string&) {}};
    }
};

} // namespace

TEST_CASE("over HTTP an answer whose chunk-size line never ends is cut off near a MiB, not read into memory",
          "[upstream]") {
    OneConnection server(endless_chunk_line);
    HttpClientTransport::Options options;
    options.family = "endless";
    options.url = server.url();
    options.read_timeout = std::chrono::milliseconds(20000);
    HttpClientTransport transport(options);
    Received received;
    transport.start(received.events());
    REQUIRE(transport.send(Json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}}));
    // The server's writes fail once the host ends the connection.
    CHECK(server.result() < 8u << 20);
    transport.close();
}

TEST_CASE("over HTTP a subscription's stream is let go once its answer came, though the server holds it open",
          "[upstream]") {
    OneConnection server(answers_then_holds);
    HttpClientTransport::Options options;
    options.family = "holds";
    options.url = server.url();
    HttpClientTransport transport(options);
    Received received;
    transport.start(received.events());
    REQUIRE(transport.send(Json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "subscriptions/listen"}}));
    CHECK(server.result() == 1);
    transport.close();
}
