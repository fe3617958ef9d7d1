#include "transport/http_transport.hpp"

#include "transport/http_connection.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <thread>

namespace gatehouse::transport {

namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpTransport::HttpTransport(protocol::McpServer& server, const plugins::LiveRegistry& registry,
                             const config::HttpSettings& settings, const config::Limits& limits,
                             const config::AuthSettings& auth,
                             std::shared_ptr<const mrtr::RequestStateSealer> page_form_tokens)
    : service_(server, registry, settings, limits, auth, std::move(page_form_tokens)), acceptor_(service_.io()) {}

HttpTransport::~HttpTransport() = default;

void HttpTransport::listen() {
    const auto& s = service_.settings;
    boost::system::error_code ec;
    const std::string host = s.listen_host == "localhost" ? "127.0.0.1" : s.listen_host;
    const auto address = net::ip::make_address(host, ec);
    if (ec)
        throw std::runtime_error("http.listen: '" + s.listen_host + "' is not an IP address (" + ec.message() + ")");
    const tcp::endpoint endpoint(address, s.listen_port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error("cannot listen on " + s.listen_host + ":" + std::to_string(s.listen_port) + ": " +
                                 ec.message());
    if (!service_.access.loopback() && !service_.authenticator.enabled()) {
        // Beyond this machine every caller would be the local user: only an
        // operator who wrote auth.mode none gets that.
        if (!service_.auth_settings.configured)
            throw std::runtime_error("http.listen " + s.listen_host +
                                     " reaches beyond this machine, and no auth section says who may call; configure "
                                     "auth (mode jwt, introspection or api_keys), or write auth.mode none to serve "
                                     "every caller as the local user");
        spdlog::warn("http: listening on {}, beyond this machine, with auth.mode none: every caller is served as the "
                     "local principal",
                     s.listen_host);
    }
    service_.authenticator.start(port());
}

std::uint16_t HttpTransport::port() const {
    boost::system::error_code ec;
    return acceptor_.local_endpoint(ec).port();
}

void HttpTransport::accept() {
    acceptor_.async_accept(service_.next_loop(), [this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
        if (!ec) {
            if (service_.connections.load() >= service_.settings.max_connections) {
                // Refused at once: a client queued behind a full server would only time out.
                static constexpr char kBusy[] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                                                "Content-Length: 0\r\nConnection: close\r\n\r\n";
                boost::system::error_code ignored;
                net::write(socket, net::buffer(kBusy, sizeof kBusy - 1), ignored);
                socket.close(ignored);
            } else {
                socket.set_option(tcp::no_delay(true), ec);
                auto connection = std::make_shared<HttpConnection>(std::move(socket), service_);
                {
                    std::lock_guard lock(connections_mutex_);
                    std::erase_if(connections_, [](const auto& weak) { return weak.expired(); });
                    connections_.push_back(connection);
                }
                connection->start();
            }
        } else {
            spdlog::warn("http: accept failed: {}", ec.message());
        }
        accept();
    });
}

void HttpTransport::run(StopSignal& stop) {
    const auto& s = service_.settings;
    spdlog::info("serving MCP over HTTP at http://{}{}:{}{}", s.listen_host.find(':') != std::string::npos ? "[" : "",
                 s.listen_host + (s.listen_host.find(':') != std::string::npos ? "]" : ""), port(), s.path);
    accept();
    stop.on_stop([this] { net::post(service_.io(), [this] { begin_drain(); }); });
    // The other loops have no acceptor: they wait for connections until the
    // drain stops them.
    std::vector<net::executor_work_guard<net::io_context::executor_type>> keep;
    std::vector<std::thread> extra;
    for (std::size_t i = 1; i < service_.loops.size(); ++i) {
        keep.push_back(net::make_work_guard(*service_.loops[i]));
        extra.emplace_back([this, i] { service_.loops[i]->run(); });
    }
    service_.io().run();
    for (auto& t : extra)
        t.join();
}

void HttpTransport::begin_drain() {
    if (service_.draining.exchange(true)) return;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    std::vector<std::shared_ptr<HttpConnection>> live;
    {
        std::lock_guard lock(connections_mutex_);
        for (auto& weak : connections_)
            if (auto c = weak.lock()) live.push_back(std::move(c));
    }
    spdlog::info("http: draining {} connection(s), {} request(s) in flight", live.size(), service_.exchanges.load());
    // Counted before any is told: the drain is not idle until every one has
    // taken it in (an answer written but not yet sent makes it linger).
    service_.drains_pending += static_cast<unsigned>(live.size());
    for (auto& c : live)
        c->drain();
    // Subscriptions never end by themselves: they get their final result now.
    service_.server.close_subscriptions();
    drain_timer_ = std::make_unique<net::steady_timer>(service_.io());
    check_drained(std::chrono::steady_clock::now() + std::chrono::milliseconds(service_.settings.drain_timeout_ms));
}

void HttpTransport::check_drained(std::chrono::steady_clock::time_point deadline) {
    // Idle once no request runs and every connection has written its answers
    // whole (a final result to a slow reader among them) and closed.
    const bool idle =
        service_.exchanges.load() == 0 && service_.finishing.load() == 0 && service_.drains_pending.load() == 0;
    if (idle || std::chrono::steady_clock::now() >= deadline) {
        if (!idle)
            spdlog::warn("http: {} request(s) still running and {} connection(s) still writing or closing after the "
                         "drain timeout; cancelling them",
                         service_.exchanges.load(), service_.finishing.load());
        std::vector<std::shared_ptr<HttpConnection>> live;
        {
            std::lock_guard lock(connections_mutex_);
            for (auto& weak : connections_)
                if (auto c = weak.lock()) live.push_back(std::move(c));
        }
        for (auto& c : live)
            c->abort();
        service_.legacy_sessions.close_all();
        // Let the closes run, then stop: each loop stops after the aborts
        // posted to it above.
        for (auto& loop : service_.loops)
            net::post(*loop, [loop = loop.get()] { loop->stop(); });
        return;
    }
    drain_timer_->expires_after(std::chrono::milliseconds(20));
    drain_timer_->async_wait([this, deadline](boost::system::error_code ec) {
        if (!ec) check_drained(deadline);
    });
}

} // namespace gatehouse::transport
