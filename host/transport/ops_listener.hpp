#pragma once

#include "config/config.hpp"
#include "metrics/address_allow_list.hpp"
#include "metrics/observability.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gatehouse::transport {

// The operators' own listener (metrics.listen): GET <metrics.path>, /health,
// /ready and /status on an address apart from the MCP endpoint, so a stdio-only
// host can be scraped and probed on loopback. One thread serves, one more
// runs the readiness probe; one request per connection, small bounded reads;
// nothing of MCP is served here. Scrapes are limited to metrics.allow when it
// is set (the configuration refuses a listener off loopback without it).
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
    // The reply, or nothing for /ready and /status, which answer_with_readiness
    // writes once the readiness probe has spoken.
    std::optional<std::string> answer(const std::string& method, const std::string& path,
                                      const boost::asio::ip::address& peer);
    std::string answer_with_readiness(const std::string& path, const boost::asio::ip::address& peer,
                                      const std::optional<std::string>& problem);
    // The probe asks the state backend and the bus, which may take their
    // whole timeouts: it runs on prober_, so /metrics and /health never wait
    // behind it, and one probe answers everyone who asked meanwhile.
    void probe_readiness(std::function<void(std::optional<std::string>)> done);
    void run_probes();
    void stop_probes(); // joins prober_

    const config::MetricsSettings settings_;
    metrics::Observability& observability_;
    Probes probes_;
    const metrics::AddressAllowList allow_;
    std::atomic<unsigned> open_{0}; // before io_: exchanges it still holds count down when it goes
    boost::asio::io_context io_{1};
    boost::asio::ip::tcp::acceptor acceptor_{io_};
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::mutex probe_mutex_;
    std::condition_variable probe_wake_;
    std::vector<std::function<void(std::optional<std::string>)>> probe_waiters_;
    bool stopping_ = false;
    std::thread prober_;
};

} // namespace gatehouse::transport
