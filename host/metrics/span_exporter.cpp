#include "metrics/span_exporter.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

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
        stream.expires_after(timeout_);
        tcp::resolver resolver(io);
        stream.connect(resolver.resolve(endpoint_.host, endpoint_.port));
        http::request<http::string_body> request{http::verb::post, endpoint_.target, 11};
        request.set(http::field::host, endpoint_.host + ":" + endpoint_.port);
        request.set(http::field::content_type, "application/x-protobuf");
        request.set(http::field::user_agent, "gatehouse/" + scope_version_);
        request.body() = body;
        request.prepare_payload();
        http::write(stream, request);
        beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 * 1024);
        http::read(stream, buffer, parser);
        const unsigned status = parser.get().result_int();
        beast::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
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
