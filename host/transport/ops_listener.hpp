#pragma once

#include "config/config.hpp"
#include "metrics/address_allow_list.hpp"
#include "metrics/observability.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace gatehouse::transport {

// The operators' own listener (metrics.listen): GET <metrics.path>, /health,
// /ready and /status on an address apart from the MCP endpoint, so a stdio-only
// host can be scraped and probed on loopback. One thread, one request per
// connection, small bounded reads; nothing of MCP is served here. Scrapes
// are limited to metrics.allow when it is set (the configuration refuses a
// listener off loopback without it).
class OpsListener {
public:
    struct Probes {
        std::function<std::optional<std::string>()> unready; // why not ready, or nothing
        std::function<bool()> draining;
        std::function<nlohmann::json()> status; // GET /status (serve/host_status.hpp)
    };

    // Binds at once; throws std::runtime_error saying why not.
    OpsListener(const config::MetricsSettings& settings, metrics::Observability& observability, Probes probes);
    ~OpsListener();
    OpsListener(const OpsListener&) = delete;
    OpsListener& operator=(const OpsListener&) = delete;

    std::uint16_t port() const { return port_; }

private:
    class Exchange;
    void accept();
    std::string answer(const std::string& method, std::string_view path, const boost::asio::ip::address& peer);

    const config::MetricsSettings settings_;
    metrics::Observability& observability_;
    Probes probes_;
    const metrics::AddressAllowList allow_;
    std::atomic<unsigned> open_{0}; // before io_: exchanges it still holds count down when it goes
    boost::asio::io_context io_{1};
    boost::asio::ip::tcp::acceptor acceptor_{io_};
    std::uint16_t port_ = 0;
    std::thread thread_;
};

} // namespace gatehouse::transport
