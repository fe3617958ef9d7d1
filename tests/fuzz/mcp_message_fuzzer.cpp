// Bytes from a client, as the stdio transport sees them: cut into lines by
// LineFramer (in reads of a size the input picks), then each line through
// McpServer::on_message over the echo test family, on a fresh connection per
// input. Every answer is encoded as the transport would, and must parse back.
#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/mcp_server.hpp"
#include "transport/line_framer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>

using namespace gatehouse;

namespace {

class CheckingOutbound final : public protocol::Outbound {
public:
    void send(const protocol::Json& message) override {
        const std::string line = protocol::encode(message);
        if (line.find('\n') != std::string::npos) std::abort(); // would break the line framing
        const auto back = protocol::Json::parse(line, nullptr, false);
        if (back.is_discarded() || !back.is_object() || back.value("jsonrpc", "") != "2.0") std::abort();
    }
};

struct Host {
    config::Config cfg;
    std::shared_ptr<const plugins::ToolRegistry> registry;
    std::unique_ptr<plugins::LiveRegistry> live;
    gate::GatePipeline gate;
    protocol::RequestPool pool{2};
    std::unique_ptr<protocol::McpServer> server;

    Host() {
        spdlog::set_level(spdlog::level::off);
        cfg = config::load_config_text(std::string("plugin_dir: ") + GATEHOUSE_TEST_PLUGIN_DIR +
                                           "\nplugins: [echo.so]\n"
                                           "limits: {max_message_bytes: 4096, max_json_depth: 16, page_size: 3,"
                                           " max_in_flight: 4}\n",
                                       "fuzz.yaml", "/");
        plugins::LoadReport report;
        registry = plugins::PluginLoader::load(cfg, report);
        if (!report.failures.empty()) {
            std::fprintf(stderr, "echo.so did not load: %s\n", report.failures[0].reason.c_str());
            std::abort();
        }
        cfg.server.version = "0.0.0-fuzz";
        live = std::make_unique<plugins::LiveRegistry>(registry);
        server = std::make_unique<protocol::McpServer>(*live, gate, cfg.server, cfg.limits, pool);
    }
};

Host& host() {
    static Host h;
    return h;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Host& h = host();
    if (size == 0) return 0;
    // The first byte picks the read size, so lines arrive split at every offset.
    const std::size_t chunk = 1 + data[0] % 64;
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

    auto out = std::make_shared<CheckingOutbound>();
    auto connection =
        std::make_shared<protocol::Connection>(out, auth::Principal{.subject = "fuzzer", .kind = "local"});
    transport::LineFramer framer(h.cfg.limits.max_message_bytes);
    const transport::LineFramer::LineHandler on_line = [&](std::string_view line) {
        h.server->on_message(connection, line);
    };
    const transport::LineFramer::OversizeHandler on_oversized = [&] {
        out->send(protocol::make_error(nullptr, protocol::error_code::invalid_request, "too large"));
    };
    for (std::size_t at = 0; at < stream.size(); at += chunk)
        framer.feed(stream.substr(at, chunk), on_line, on_oversized);
    if (const std::string last = framer.finish(); !last.empty()) h.server->on_message(connection, last);

    // Tool calls run on the pool: give them a moment, then cancel the rest (the
    // echo family's slow tool stops when cancelled), so no input outlives itself.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (h.server->in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    connection->cancel_all();
    while (h.server->in_flight() > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    return 0;
}
