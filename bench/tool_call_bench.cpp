// In-process cost of one tools/call of the test family's `noop`, without
// pipes: the whole of McpServer::on_message (parse -> decode -> pool ->
// dispatch -> gate -> validate -> plugin -> result), and the pieces of it
// on their own, so a hot-path cost shows up where it is paid.
//
//   tool_call_bench [--benchmark_filter=...]   (GATEHOUSE_ECHO_PLUGIN=path/echo.so overrides the built-in path)
#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/connection.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/mcp_server.hpp"
#include "protocol/request_pool.hpp"
#include "protocol/tool_call.hpp"

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#ifndef GATEHOUSE_ECHO_PLUGIN
#define GATEHOUSE_ECHO_PLUGIN ""
#endif

namespace {

using namespace gatehouse;
using protocol::Json;

const std::string kModernCall =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"noop","arguments":{},)"
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";

const std::string kModernList =
    R"({"jsonrpc":"2.0","id":8,"method":"tools/list","params":{)"
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";

// Counts answers and encodes them, as the stdio transport would, so the
// encode cost stays in the measured path.
class CountingOutbound final : public protocol::Outbound {
public:
    void send(const Json& message) override {
        bytes_ += protocol::encode(message).size() + 1;
        {
            std::lock_guard lock(mutex_);
            ++answers_;
        }
        answered_.notify_one();
    }

    void wait_for(std::uint64_t answers) {
        std::unique_lock lock(mutex_);
        answered_.wait(lock, [&] { return answers_ >= answers; });
    }

    std::uint64_t answers() {
        std::lock_guard lock(mutex_);
        return answers_;
    }

private:
    std::mutex mutex_;
    std::condition_variable answered_;
    std::uint64_t answers_ = 0;
    std::atomic<std::size_t> bytes_{0};
};

// One host with the echo test family loaded, shared by every benchmark.
struct Host {
    Host() : pool(1) {
        spdlog::set_level(spdlog::level::warn);
        std::string path = GATEHOUSE_ECHO_PLUGIN;
        if (const char* env = std::getenv("GATEHOUSE_ECHO_PLUGIN"); env && *env) path = env;
        if (path.empty()) throw std::runtime_error("set GATEHOUSE_ECHO_PLUGIN to the echo test plugin");
        config::Config cfg;
        cfg.plugins.push_back({.path = path, .as_written = path, .where = {}});
        plugins::LoadReport report;
        registry = plugins::PluginLoader::load(cfg, report);
        if (!report.failures.empty())
            throw std::runtime_error("cannot load " + path + ": " + report.failures.front().reason);
        server = std::make_unique<protocol::McpServer>(*registry, gate, cfg.server, cfg.limits, pool);
        outbound = std::make_shared<CountingOutbound>();
        connection = std::make_shared<protocol::Connection>(outbound, auth::Principal{"bench", "local"});
    }

    std::unique_ptr<plugins::ToolRegistry> registry;
    gate::GatePipeline gate;
    protocol::RequestPool pool;
    std::unique_ptr<protocol::McpServer> server;
    std::shared_ptr<CountingOutbound> outbound;
    std::shared_ptr<protocol::Connection> connection;
};

Host& host() {
    static Host h;
    return h;
}

// The whole path, one call at a time: on_message hands the call to the pool
// and the answer arrives on a worker thread, as it does in the server.
void BM_OnMessage_ToolsCall_Noop(benchmark::State& state) {
    auto& h = host();
    std::uint64_t expected = h.outbound->answers();
    for (auto _ : state) {
        h.server->on_message(h.connection, kModernCall);
        h.outbound->wait_for(++expected);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OnMessage_ToolsCall_Noop)->UseRealTime();

// The same with 32 calls handed over before waiting: the pool's queue is
// never empty, so the per-call handover cost is amortised as under load.
void BM_OnMessage_ToolsCall_Noop_Batch32(benchmark::State& state) {
    auto& h = host();
    std::uint64_t expected = h.outbound->answers();
    for (auto _ : state) {
        for (int i = 0; i < 32; ++i)
            h.server->on_message(h.connection, kModernCall);
        expected += 32;
        h.outbound->wait_for(expected);
    }
    state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_OnMessage_ToolsCall_Noop_Batch32)->UseRealTime();

// tools/list is answered on the caller's thread: parse, decode, list, encode,
// with no thread handover.
void BM_OnMessage_ToolsList(benchmark::State& state) {
    auto& h = host();
    for (auto _ : state)
        h.server->on_message(h.connection, kModernList);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OnMessage_ToolsList);

// The pieces.
void BM_Parse_ToolsCall(benchmark::State& state) {
    for (auto _ : state)
        benchmark::DoNotOptimize(Json::parse(kModernCall));
}
BENCHMARK(BM_Parse_ToolsCall);

void BM_ToolCall_Run_Noop(benchmark::State& state) {
    auto& h = host();
    protocol::ToolCall tool_call(*h.registry, h.gate);
    const Json params = Json::parse(kModernCall)["params"];
    for (auto _ : state) {
        protocol::Request request;
        request.id = 7;
        request.method = "tools/call";
        request.params = params;
        request.connection = h.connection.get();
        benchmark::DoNotOptimize(tool_call.run(request));
    }
}
BENCHMARK(BM_ToolCall_Run_Noop);

void BM_Encode_NoopResult(benchmark::State& state) {
    const Json response = protocol::make_result(
        7, {{"content", Json::array({{{"type", "text"}, {"text", ""}}})},
            {"resultType", "complete"},
            {"_meta", {{"io.modelcontextprotocol/serverInfo", {{"name", "gatehouse"}, {"version", "0.1.0"}}}}}});
    for (auto _ : state)
        benchmark::DoNotOptimize(protocol::encode(response));
}
BENCHMARK(BM_Encode_NoopResult);

} // namespace

BENCHMARK_MAIN();
