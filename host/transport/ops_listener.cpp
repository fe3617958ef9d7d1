#include "transport/ops_listener.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>
#include <utility>

namespace gatehouse::transport {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr unsigned kMaxOpen = 64;
constexpr std::uint32_t kMaxHeaderBytes = 8 * 1024;
constexpr auto kRequestTime = std::chrono::seconds(5);

std::string response(int status, std::string_view content_type, const std::string& body,
                     std::string_view extra_headers = {}) {
    const auto reason = http::obsolete_reason(static_cast<http::status>(status));
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
    out += "Content-Type: " + std::string(content_type) + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nCache-Control: no-store\r\nConnection: close\r\n";
    out += extra_headers;
    out += "\r\n";
    out += body;
    return out;
}

std::string text(int status, const std::string& sentence, std::string_view extra_headers = {}) {
    return response(status, "text/plain; charset=utf-8", sentence + "\n", extra_headers);
}

} // namespace

// One connection: one request read within kRequestTime, one answer, closed.
class OpsListener::Exchange : public std::enable_shared_from_this<Exchange> {
public:
    Exchange(tcp::socket socket, OpsListener& listener) : stream_(std::move(socket)), listener_(listener) {
        ++listener_.open_;
    }
    ~Exchange() { --listener_.open_; }

    void start() {
        parser_.header_limit(kMaxHeaderBytes);
        parser_.body_limit(0);
        stream_.expires_after(kRequestTime);
        http::async_read(stream_, buffer_, parser_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

private:
    void on_read(beast::error_code ec) {
        if (ec == http::error::end_of_stream) return;
        if (ec) {
            reply_ = text(400, "Bad request: " + ec.message() + ".");
        } else {
            const auto& request = parser_.get();
            const std::string_view target(request.target().data(), request.target().size());
            beast::error_code no_peer;
            const auto peer = stream_.socket().remote_endpoint(no_peer);
            // Whatever an answer throws (text that is no UTF-8 in a status,
            // a number it cannot read) is this request's 500, never the end
            // of the listener's thread, which has nothing to catch it.
            const std::string path(target.substr(0, target.find('?')));
            const auto address = no_peer ? net::ip::address() : peer.address();
            std::optional<std::string> reply;
            if (answered([&] { reply = listener_.answer(std::string(request.method_string()), path, address); },
                         target)) {
                if (!reply) {
                    // /ready and /status wait for the readiness probe, off this thread.
                    listener_.probe_readiness([self = shared_from_this(), path,
                                               address](std::optional<std::string> problem) {
                        net::post(self->stream_.get_executor(), [self, path, address, problem = std::move(problem)] {
                            // A throw leaves the 500 in reply_: written either way.
                            self->answered(
                                [&] { self->reply_ = self->listener_.answer_with_readiness(path, address, problem); },
                                path);
                            self->write();
                        });
                    });
                    return;
                }
                reply_ = std::move(*reply);
            }
        }
        write();
    }

    // Runs what makes the reply; a throw becomes a 500 (reply_), false.
    template <class Make> bool answered(Make make, std::string_view target) {
        try {
            make();
            return true;
        } catch (const std::exception& e) {
            spdlog::error("ops listener: answering {} failed: {}", std::string(target.substr(0, 200)), e.what());
            reply_ = text(500, "The host could not answer this; its log says why.");
            return false;
        }
    }

    void write() {
        stream_.expires_after(kRequestTime); // the time the probe took is not the write's
        net::async_write(stream_, net::buffer(reply_), [self = shared_from_this()](beast::error_code, std::size_t) {
            beast::error_code ignored;
            self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        });
    }

    beast::tcp_stream stream_;
    OpsListener& listener_;
    beast::flat_buffer buffer_{kMaxHeaderBytes};
    http::request_parser<http::empty_body> parser_;
    std::string reply_;
};

OpsListener::OpsListener(const config::MetricsSettings& settings, metrics::Observability& observability, Probes probes)
    : settings_(settings), observability_(observability), probes_(std::move(probes)), allow_(settings.allow) {
    beast::error_code ec;
    const auto address = net::ip::make_address(settings_.listen_host, ec);
    if (ec) throw std::runtime_error("metrics.listen: '" + settings_.listen_host + "' is not an IP address");
    const tcp::endpoint endpoint(address, settings_.listen_port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error("metrics.listen: cannot listen on " + settings_.listen_host + ":" +
                                 std::to_string(settings_.listen_port) + ": " + ec.message());
    port_ = acceptor_.local_endpoint().port();
    spdlog::info("metrics, /health, /ready and /status served on {}:{}", settings_.listen_host, port_);
    accept();
    prober_ = std::thread([this] { run_probes(); });
    try {
        thread_ = std::thread([this] { io_.run(); });
    } catch (...) {
        stop_probes();
        throw;
    }
}

void OpsListener::stop_probes() {
    {
        std::lock_guard lock(probe_mutex_);
        stopping_ = true;
    }
    probe_wake_.notify_one();
    prober_.join();
}

OpsListener::~OpsListener() {
    stop_probes();
    net::post(io_, [this] {
        beast::error_code ignored;
        acceptor_.close(ignored);
    });
    io_.stop();
    thread_.join();
}

void OpsListener::accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted) return;
        if (!ec) {
            if (open_.load() >= kMaxOpen) {
                beast::error_code ignored;
                socket.close(ignored); // a flood of connections holds no more than kMaxOpen
            } else {
                std::make_shared<Exchange>(std::move(socket), *this)->start();
            }
        }
        accept();
    });
}

// Everyone who asks while a probe runs, or before it starts, hears that
// probe's verdict: a crowd of probers costs the backend one round trip.
void OpsListener::probe_readiness(std::function<void(std::optional<std::string>)> done) {
    {
        std::lock_guard lock(probe_mutex_);
        probe_waiters_.push_back(std::move(done));
    }
    probe_wake_.notify_one();
}

void OpsListener::run_probes() {
    std::unique_lock lock(probe_mutex_);
    for (;;) {
        probe_wake_.wait(lock, [this] { return stopping_ || !probe_waiters_.empty(); });
        if (stopping_) return;
        lock.unlock();
        std::optional<std::string> problem;
        try {
            if (probes_.unready) problem = probes_.unready();
        } catch (const std::exception& e) {
            problem = std::string("the readiness probe failed: ") + e.what();
        }
        lock.lock();
        auto waiters = std::exchange(probe_waiters_, {});
        lock.unlock();
        for (auto& waiter : waiters)
            waiter(problem);
        lock.lock();
    }
}

std::optional<std::string> OpsListener::answer(const std::string& method, const std::string& path,
                                               const boost::asio::ip::address& peer) {
    const bool known = path == settings_.path || path == "/health" || path == "/ready" || path == "/status";
    if (!known)
        return text(404, "Nothing here: this listener serves " + settings_.path + ", /health, /ready and /status.");
    if (method != "GET") return text(405, "Read it with GET.", "Allow: GET\r\n");
    if (path == "/health") {
        const bool draining = probes_.draining && probes_.draining();
        return response(draining ? 503 : 200, "application/json",
                        draining ? R"({"status":"draining"})" : R"({"status":"ok"})");
    }
    if (path == "/ready") {
        if (probes_.draining && probes_.draining()) return answer_with_readiness(path, peer, "draining");
        return std::nullopt;
    }
    if (!allow_.empty() && !allow_.allows(peer))
        return text(403, "This address may not read the metrics or the status (metrics.allow in the configuration).");
    if (path == "/status") return std::nullopt;
    return response(200, metrics::kExpositionContentType, observability_.exposition());
}

std::string OpsListener::answer_with_readiness(const std::string& path, const boost::asio::ip::address& peer,
                                               const std::optional<std::string>& problem) {
    if (path == "/ready") {
        if (problem) {
            // Any prober learns whether to send traffic; only an address
            // metrics.allow lets read the status learns why (the reason may
            // name a backend's address and its error).
            nlohmann::json verdict = {{"status", "unavailable"}};
            if (allow_.empty() || allow_.allows(peer)) verdict["reason"] = *problem;
            return response(503, "application/json", verdict.dump(), "Retry-After: 1\r\n");
        }
        return response(200, "application/json", R"({"status":"ready"})");
    }
    // /status: what the families are doing, for the operator, under the verdict /ready gives.
    nlohmann::json status = probes_.status ? probes_.status() : nlohmann::json::object();
    if (probes_.draining && probes_.draining()) {
        status["status"] = "draining";
    } else {
        status["status"] = problem ? "unavailable" : "ready";
        if (problem) status["reason"] = *problem;
    }
    return response(200, "application/json", status.dump(2) + "\n");
}

} // namespace gatehouse::transport
