#include "metrics/span_exporter.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <optional>
#include <stdexcept>

namespace gatehouse::metrics {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {
constexpr std::size_t kBatch = 512;
constexpr auto kPace = std::chrono::milliseconds(200);
} // namespace

OtlpEndpoint parse_otlp_endpoint(const std::string& url) {
    constexpr std::string_view scheme = "http://";
    if (url.rfind(scheme, 0) != 0)
        throw std::invalid_argument("the OTLP endpoint must be an http:// URL such as "
                                    "http://127.0.0.1:4318/v1/traces (TLS: put a collector on loopback)");
    const std::string rest = url.substr(scheme.size());
    const auto slash = rest.find('/');
    const std::string authority = rest.substr(0, slash);
    OtlpEndpoint endpoint;
    endpoint.target = slash == std::string::npos ? "/v1/traces" : rest.substr(slash);
    if (authority.empty() || authority.find('@') != std::string::npos)
        throw std::invalid_argument("the OTLP endpoint names no host (or holds user information)");
    for (unsigned char c : url)
        if (c <= 0x20 || c >= 0x7f) throw std::invalid_argument("the OTLP endpoint holds a space or a control byte");
    if (authority[0] == '[') {
        const auto close = authority.find(']');
        if (close == std::string::npos) throw std::invalid_argument("the OTLP endpoint's IPv6 address has no ']'");
        endpoint.host = authority.substr(1, close - 1);
        endpoint.port = close + 1 < authority.size() && authority[close + 1] == ':' ? authority.substr(close + 2) : "";
    } else {
        const auto colon = authority.rfind(':');
        endpoint.host = authority.substr(0, colon);
        endpoint.port = colon == std::string::npos ? "" : authority.substr(colon + 1);
    }
    if (endpoint.port.empty()) endpoint.port = "4318";
    for (char c : endpoint.port)
        if (c < '0' || c > '9') throw std::invalid_argument("the OTLP endpoint's port is not a number");
    return endpoint;
}

SpanExporter::SpanExporter(OtlpEndpoint endpoint, std::vector<Attribute> resource, std::string scope_version,
                           std::chrono::milliseconds timeout, std::size_t max_queue, Counters counters)
    : endpoint_(std::move(endpoint)), resource_(std::move(resource)), scope_version_(std::move(scope_version)),
      timeout_(timeout), counters_(std::move(counters)),
      spans_(max_queue, kBatch, kPace, [this](std::vector<Span>& batch) { send(batch); }) {}

SpanExporter::~SpanExporter() {
    spans_.flush();
}

void SpanExporter::add(Span span) {
    if (!spans_.push(std::move(span)) && counters_.dropped) counters_.dropped(1);
}

void SpanExporter::send(std::vector<Span>& batch) {
    if (batch.empty()) return;
    if (post(encode_export_request(resource_, "gatehouse", scope_version_, batch))) return;
    if (counters_.export_failed) counters_.export_failed();
    if (counters_.dropped) counters_.dropped(batch.size());
}

bool SpanExporter::post(const std::string& body) {
    std::string failure;
    try {
        boost::asio::io_context io;
        beast::tcp_stream stream(io);
        tcp::resolver resolver(io);
        http::request<http::string_body> request{http::verb::post, endpoint_.target, 11};
        request.set(http::field::host, endpoint_.host + ":" + endpoint_.port);
        request.set(http::field::content_type, "application/x-protobuf");
        request.set(http::field::user_agent, "gatehouse/" + scope_version_);
        request.body() = body;
        request.prepare_payload();
        beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 * 1024);
        // Every step is asynchronous on this io_context: Beast applies a
        // stream's deadline to asynchronous operations only, so a collector
        // that accepts and never answers held this thread for ever (and the
        // host's shutdown, which flushes the spans). One deadline covers the
        // connection, the request and the answer; run_for bounds the name's
        // resolution too.
        std::optional<beast::error_code> ended;
        const auto end = [&](beast::error_code ec) {
            if (!ended) ended = ec;
            stream.socket().close(ec);
        };
        resolver.async_resolve(
            endpoint_.host, endpoint_.port, [&](beast::error_code ec, tcp::resolver::results_type found) {
                if (ec) return end(ec);
                stream.expires_after(timeout_);
                stream.async_connect(found, [&](beast::error_code ec, const tcp::endpoint&) {
                    if (ec) return end(ec);
                    http::async_write(stream, request, [&](beast::error_code ec, std::size_t) {
                        if (ec) return end(ec);
                        http::async_read(stream, buffer, parser, [&](beast::error_code ec, std::size_t) { end(ec); });
                    });
                });
            });
        io.run_for(timeout_ + std::chrono::seconds(1));
        if (!ended) throw std::runtime_error("no answer within " + std::to_string(timeout_.count()) + " ms");
        if (*ended) throw beast::system_error(*ended);
        const unsigned status = parser.get().result_int();
        if (status >= 200 && status < 300) {
            if (failing_)
                spdlog::info("span export to {}:{}{} works again", endpoint_.host, endpoint_.port, endpoint_.target);
            failing_ = false;
            return true;
        }
        failure = "the collector answered HTTP " + std::to_string(status);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    if (!failing_)
        spdlog::warn("span export to {}:{}{} failed: {}; spans are dropped until it works again", endpoint_.host,
                     endpoint_.port, endpoint_.target, failure);
    failing_ = true;
    return false;
}

} // namespace gatehouse::metrics
