// Where a call runs (transport/call_placement.hpp) and the pace that judges
// a tool quick (plugins::CallPace): the one place both transports ask.
#include "config/config_loader.hpp"
#include "gate/gate_pipeline.hpp"
#include "plugins/plugin_loader.hpp"
#include "plugins/tool.hpp"
#include "protocol/mcp_server.hpp"
#include "test_files.hpp"
#include "transport/call_placement.hpp"
#include "transport/http_service.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

using namespace gatehouse;
using gatehouse::plugins::CallPace;
using gatehouse::protocol::ReadyCall;
using gatehouse::transport::CallSite;
using gatehouse::transport::place_http_call;
using gatehouse::transport::place_stdio_call;
using namespace std::chrono_literals;

namespace {

ReadyCall call(bool quick, bool remote, bool alone, bool legacy = false) {
    ReadyCall ready;
    ready.run = [] {};
    ready.quick = quick;
    ready.remote = remote;
    ready.alone = alone;
    ready.legacy = legacy;
    return ready;
}

CallSite on_stdio(const ReadyCall& ready, bool free_worker = true, bool watch_ready = true, bool read_behind = false) {
    return place_stdio_call(
        ready, read_behind, [&] { return free_worker; }, [&] { return watch_ready; });
}

} // namespace

TEST_CASE("a quick call of a family in this process runs in place, however many are in flight", "[placement]") {
    CHECK(on_stdio(call(true, false, true)) == CallSite::reader_watched);
    CHECK(on_stdio(call(true, false, false)) == CallSite::reader_watched);
    CHECK(place_http_call(call(true, false, false), 2) == CallSite::io_loop);
    // Not quick, no worker to take the reading over, no watch, one loop: never.
    CHECK(on_stdio(call(false, false, true)) == CallSite::reader_or_pool);
    CHECK(on_stdio(call(true, false, true), false) == CallSite::reader_or_pool);
    CHECK(on_stdio(call(true, false, true), true, false) == CallSite::reader_or_pool);
    CHECK(place_http_call(call(true, false, true), 1) == CallSite::pool);
    CHECK(place_http_call(call(true, false, true, true), 2) == CallSite::pool);
}

TEST_CASE("over HTTP, no call of a host whose state is in Redis runs on an I/O loop", "[placement]") {
    // Each call waits on Redis (the gate's session, the buckets): a slow
    // Redis would hold the loop, and /health with it.
    CHECK(place_http_call(call(true, false, true), 2, false) == CallSite::io_loop);
    CHECK(place_http_call(call(true, false, true), 2, true) == CallSite::pool);
    CHECK(place_http_call(call(true, true, true), 4, true) == CallSite::pool);
}

TEST_CASE("a quick call of a family in another process runs in place only while nothing else is in flight",
          "[placement]") {
    // Alone: its thread waits for the other process's answer, and nothing waits behind it.
    CHECK(on_stdio(call(true, true, true)) == CallSite::reader_watched);
    CHECK(place_http_call(call(true, true, true), 2) == CallSite::io_loop);
    // With others in flight, the reading (the loop) is not held while it waits.
    CHECK(on_stdio(call(true, true, false)) == CallSite::reader_or_pool);
    CHECK(place_http_call(call(true, true, false), 2) == CallSite::pool);
    CHECK(on_stdio(call(false, true, true)) == CallSite::reader_or_pool);
    // Nor when requests read with it wait behind it: the first of a burst
    // is alone in flight, and would hold the rest until its answer came.
    CHECK(on_stdio(call(true, true, true), true, true, true) == CallSite::reader_or_pool);
    // A family in this process keeps its thread busy anyway: in place.
    CHECK(on_stdio(call(true, false, true), true, true, true) == CallSite::reader_watched);
}

TEST_CASE("a call whose family answers later runs in place on stdio, whatever is in flight; over HTTP on the pool",
          "[placement]") {
    // It holds its thread only to pass the gate and send itself.
    ReadyCall later = call(false, true, false);
    later.answers_later = true;
    CHECK(on_stdio(later) == CallSite::reader_watched);
    CHECK(on_stdio(later, true, true, true) == CallSite::reader_watched);
    // Still watched: with no worker to take the reading over should the
    // send stall, or no watch, it queues as any call.
    CHECK(on_stdio(later, false) == CallSite::reader_or_pool);
    CHECK(on_stdio(later, true, false) == CallSite::reader_or_pool);
    // A send that waits for its family's process to drain its pipe never holds a loop.
    later.quick = true;
    later.alone = true;
    CHECK(place_http_call(later, 4) == CallSite::pool);
}

TEST_CASE("a tool is quick after a streak of quick calls; a lone slow call keeps it, two in a row do not",
          "[placement]") {
    CallPace pace;
    for (std::uint32_t i = 0; i + 1 < CallPace::kStreak; ++i)
        pace.record(10us);
    CHECK_FALSE(pace.quick());
    pace.record(10us);
    CHECK(pace.quick());
    for (std::uint32_t i = 0; i < CallPace::kStreak; ++i)
        pace.record(10us);
    pace.record(CallPace::kQuick); // a busy machine's pause
    CHECK(pace.quick());
    pace.record(10us);
    pace.record(5ms);
    pace.record(5ms);
    CHECK_FALSE(pace.quick());
}

TEST_CASE("a tool slow one call in four never counts as quick; one slow in twenty does", "[placement]") {
    CallPace often_slow;
    for (int i = 0; i < 400; ++i)
        often_slow.record(i % 4 == 0 ? 2ms : 10us);
    CHECK_FALSE(often_slow.quick());
    CallPace seldom_slow;
    for (int i = 0; i < 400; ++i) {
        seldom_slow.record(i % 20 == 0 ? 2ms : 10us);
        if (i >= 100) CHECK(seldom_slow.quick());
    }
}

TEST_CASE("a call whose schemas run std::regex never runs on an I/O loop, however quick", "[placement]") {
    ReadyCall ready = call(true, false, true);
    CHECK(place_http_call(ready, 2) == CallSite::io_loop);
    ready.needs_worker_stack = true;
    CHECK(place_http_call(ready, 2) == CallSite::pool);
    CHECK(place_http_call(ready, 16) == CallSite::pool);
    // stdio's reader runs on a worker: it may still run it in place.
    CHECK(on_stdio(ready) == CallSite::reader_watched);
}

TEST_CASE("over HTTP, a call of a family that runs one call at a time never runs on an I/O loop", "[placement]") {
    ReadyCall ready = call(true, false, true);
    ready.serialized = true;
    // It waits for the family's lock first, behind whatever call or page holds it.
    CHECK(place_http_call(ready, 2) == CallSite::pool);
    // Over stdio the watch hands the reading on should it wait.
    CHECK(on_stdio(ready) == CallSite::reader_watched);
}

TEST_CASE("over HTTP, a quick call runs as the last act of the handler that read it, ahead of the loop's queued ones",
          "[placement][http]") {
    auto cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                            "\nplugins: [echo.so]\ntransports: [http]\nhttp: {threads: 2}\n",
                                        "test.yaml", "/");
    plugins::LoadReport report;
    auto registry = plugins::PluginLoader::load(cfg, report);
    REQUIRE(report.failures.empty());
    gate::GatePipeline gate;
    protocol::RequestPool pool{1};
    plugins::LiveRegistry live(std::move(registry));
    protocol::McpServer server(live, gate, cfg.server, cfg.limits, pool);
    transport::HttpService service(server, live, cfg.http, cfg.limits);
    boost::asio::io_context& loop = *service.loops.at(0);

    std::vector<std::string> ran;
    auto quick = [&](std::string name) {
        ReadyCall ready = call(true, false, false);
        ready.run = [&ran, name] { ran.push_back(name); };
        REQUIRE(place_http_call(ready, service.loops.size()) == CallSite::io_loop);
        return ready;
    };
    // Another connection's read, already queued when this one's handler runs.
    boost::asio::post(loop, [&] { ran.push_back("another connection's read"); });

    std::function<void()> after_read;
    service.run_call(quick("the call read"), loop.get_executor(), &after_read);
    REQUIRE(after_read);
    CHECK(ran.empty()); // nothing posted: it waits for its handler's end
    // The handler already holds a call: a second one (never made by one
    // read, which reads one request) is posted, as is one outside a read.
    service.run_call(quick("a second call"), loop.get_executor(), &after_read);
    service.run_call(quick("a call outside a read"), loop.get_executor());
    after_read(); // the read handler's last act
    loop.poll();
    CHECK(ran == std::vector<std::string>{"the call read", "another connection's read", "a second call",
                                          "a call outside a read"});
}
