// The path of one tools/call, over stdio's entry (McpServer::on_message) and
// over a real HTTP transport on loopback: the message is decoded once and
// its tool looked up once.
#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/mcp_server.hpp"
#include "recording_outbound.hpp"
#include "test_files.hpp"
#include "transport/http_transport.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <thread>

using namespace gatehouse;
using protocol::Json;
using test::RecordingOutbound;

namespace {

struct Host {
    config::Config cfg = config::load_config_text("plugin_dir: " + test::plugin_dir().string() +
                                                      "\nplugins: [echo.so]\nhttp: {listen: \"127.0.0.1:0\"}\n",
                                                  "test.yaml", "/");
    std::shared_ptr<const plugins::ToolRegistry> registry = load(cfg);
    plugins::LiveRegistry live{registry};
    gate::GatePipeline gate;
    protocol::RequestPool pool{2};
    protocol::McpServer server{live, gate, cfg.server, cfg.limits, pool};

    static std::unique_ptr<plugins::ToolRegistry> load(const config::Config& cfg) {
        plugins::LoadReport report;
        auto registry = plugins::PluginLoader::load(cfg, report);
        REQUIRE(report.failures.empty());
        return registry;
    }
};

const char* const kCall = R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{)"
                          R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                          R"("io.modelcontextprotocol/clientCapabilities":{}},)"
                          R"("name":"echo","arguments":{"text":"once"}}})";

// One POST over a fresh connection; the whole response as read until close.
std::string post(std::uint16_t port, const std::string& body) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    const std::string request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                                "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
                                "Connection: close\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    REQUIRE(::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
    std::string response;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        response.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    return response;
}

} // namespace

TEST_CASE("a tools/call read from text looks its tool up once", "[call_path]") {
    Host h;
    auto out = std::make_shared<RecordingOutbound>();
    auto connection = std::make_shared<protocol::Connection>(out, auth::Principal{"tester", "local", {}, {}, {}});
    const auto lookups = h.registry->lookups();
    h.server.on_message(connection, kCall);
    h.pool.stop(); // the call has answered
    CHECK(h.registry->lookups() == lookups + 1);
    const auto sent = out->take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["result"]["structuredContent"]["text"] == "once");
}

TEST_CASE("a tools/call over HTTP is decoded once and looks its tool up once", "[call_path]") {
    Host h;
    transport::HttpTransport http(h.server, h.live, h.cfg.http, h.cfg.limits);
    http.listen();
    transport::StopSignal stop;
    std::thread serving([&] { http.run(stop); });
    const auto lookups = h.registry->lookups();
    const std::string response = post(http.port(), kCall);
    const auto counted = h.registry->lookups() - lookups;
    stop.request();
    serving.join();
    // As the host does: workers are joined before the transport they answer
    // through goes away (the call's last hold on its connection may be a worker's).
    h.pool.stop();
    CHECK_THAT(response, Catch::StartsWith("HTTP/1.1 200"));
    CHECK_THAT(response, Catch::Contains(R"("text":"once")"));
    // Headers, scope and the call itself all read the one decoded request.
    CHECK(counted == 1);
}
