#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/bucket_store.hpp"
#include "metrics/observability.hpp"
#include "mrtr/request_state_sealer.hpp"
#include "plugins/host_services.hpp"
#include "plugins/plugin_loader.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/mcp_server.hpp"
#include "protocol/request_pool.hpp"
#include "session/session_service.hpp"
#include "state/notification_bus.hpp"
#include "state/redis_client.hpp"
#include "state/state_backend.hpp"
#include "transport/http_transport.hpp"
#include "transport/ops_listener.hpp"
#include "transport/stop_signal.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace gatehouse::serve {

// Which transports a host serves.
struct Transports {
    bool stdio = false;
    bool http = false;
};

// The host cannot be built as configured; what() is the sentence for the
// log, status the exit status.
class HostError : public std::runtime_error {
public:
    HostError(const std::string& sentence, int status) : std::runtime_error(sentence), status_(status) {}
    int status() const { return status_; }

private:
    int status_;
};

// One host: every part it serves with, owned here and built in one place
// (the constructor, whose body is the list of parts in the order they
// depend on each other). Nothing of it is process-wide: plugins reach it
// through their calls (plugins::HostServices), so two hosts can share a
// process.
class Host {
public:
    // Throws HostError.
    Host(config::Config config, Transports transports);
    ~Host();
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;

    // Serves until the transports end (end of input, a stop signal).
    // Returns the exit status.
    int run(transport::StopSignal& stop);

    // Waits at most `grace` for the last call to return; false when a
    // plugin ignores its cancellation (the process must then end without
    // unloading it). No change notification reaches this host afterwards.
    bool stop_workers(std::chrono::milliseconds grace);

    // Writes the audit lines still queued (its writer runs every 50 ms):
    // before an exit that runs no destructors.
    void flush_audit() const;

    // What a configuration re-read (SIGHUP) changes while serving: each
    // domain's and tool's exposure (tools/list), and the upstreams, told to
    // every listener.
    void reload(const config::Config& fresh);

private:
    std::unique_ptr<plugins::LiveRegistry> load_families();
    void follow_upstreams();
    void follow_upstream(upstream::UpstreamFamily& upstream);
    void take_upstream_offer(const std::string& name);
    void report_unapplied(const config::Config& fresh) const;
    void reload_upstreams(const config::Config& fresh);
    std::unique_ptr<session::SessionService> open_sessions(std::future<std::unique_ptr<state::StateBackend>>& opening);
    state::StateBackend* family_state();
    std::shared_ptr<state::NotificationBus> open_bus() const;
    std::shared_ptr<limits::BucketStore> rate_buckets() const;
    std::unique_ptr<protocol::RequestPool> make_pool() const;
    std::shared_ptr<const mrtr::RequestStateSealer> make_state_sealer() const;
    std::unique_ptr<protocol::McpServer> make_server();
    plugins::ChangeSink publish_changes();
    std::unique_ptr<transport::HttpTransport> listen_http();
    void add_gauges();
    std::unique_ptr<transport::OpsListener> listen_ops();

    const config::Config config_;
    const Transports transports_;
    // What operators see (metrics, audit, spans): built before the plugins
    // load, so their failures are counted; gone after every part that counts.
    std::unique_ptr<metrics::Observability> observability_;
    std::unique_ptr<plugins::LiveRegistry> registry_; // plugins unload last
    config::Config families_config_; // under registry_'s change lock: the configuration upstream families list under
    // What the configuration names that did not load: the plugins' from the
    // start, the upstreams' from the last reading of upstreams: (start or
    // SIGHUP). Read by the operators' listener (/status) while a re-read writes it.
    mutable std::mutex not_loaded_mutex_;
    std::vector<plugins::LoadFailure> not_loaded_;
    std::vector<plugins::LoadFailure> not_loaded() const;
    // Adds `failed` to what did not load; `replacing`: in place of the
    // upstreams' failures of the last reading.
    void upstreams_not_loaded(std::vector<plugins::LoadFailure> failed, bool replacing);
    std::shared_ptr<state::RedisClient> redis_; // with session.backend redis: the one client of its parts
    std::unique_ptr<session::SessionService> sessions_;
    std::unique_ptr<state::StateBackend> families_only_state_; // families' state when no sessions hold a backend
    gate::GatePipeline gate_;
    std::shared_ptr<state::NotificationBus> bus_;
    plugins::HostServices services_;
    std::unique_ptr<protocol::RequestPool> pool_;
    std::shared_ptr<const mrtr::RequestStateSealer> state_sealer_;
    std::unique_ptr<protocol::McpServer> server_;
    std::optional<plugins::ChangesOutsideCalls> changes_outside_calls_;
    std::unique_ptr<transport::HttpTransport> http_;
    std::unique_ptr<transport::OpsListener> ops_; // metrics.listen
    std::atomic<bool> stopping_{false};
    // Stops the upstreams' supervisors before any part they call into goes:
    // a member, declared last, so it also runs when the constructor throws
    // after they started (a port in use, say).
    struct UpstreamsStop {
        Host& host;
        ~UpstreamsStop();
    } upstreams_stop_{*this};
};

} // namespace gatehouse::serve
