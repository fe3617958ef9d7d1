#pragma once

#include "protocol/request_pool.hpp"
#include "transport/http_service.hpp"
#include "transport/stop_signal.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace gatehouse::transport {

class HttpConnection;

// Streamable HTTP on one endpoint for both protocol revisions (Boost.Beast).
class HttpTransport {
public:
    HttpTransport(protocol::McpServer& server, const plugins::LiveRegistry& registry,
                  const config::HttpSettings& settings, const config::Limits& limits,
                  const config::AuthSettings& auth = {},
                  std::shared_ptr<const mrtr::RequestStateSealer> page_form_tokens = nullptr);
    ~HttpTransport();

    // What its connections share (what its gauges read).
    HttpService& service() { return service_; }

    // Binds the listening socket; throws std::runtime_error saying why not.
    void listen();

    // The bound port (http.listen with port 0 picks a free one).
    std::uint16_t port() const;

    // Serves until a stop is requested, then drains: new requests get 503,
    // requests in flight get drain_timeout_ms to answer, the rest are
    // cancelled. Returns once every connection is closed.
    void run(StopSignal& stop);

private:
    void accept();
    void begin_drain();
    void check_drained(std::chrono::steady_clock::time_point deadline);

    HttpService service_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::mutex connections_mutex_;
    std::vector<std::weak_ptr<HttpConnection>> connections_;
    std::unique_ptr<boost::asio::steady_timer> drain_timer_;
};

} // namespace gatehouse::transport
