#pragma once

#include "auth/principal.hpp"
#include "auth/request_authenticator.hpp"
#include "config/config.hpp"
#include "metrics/address_allow_list.hpp"
#include "plugins/live_registry.hpp"
#include "mrtr/request_state_sealer.hpp"
#include "protocol/mcp_server.hpp"
#include "protocol/request_pool.hpp"
#include "transport/call_placement.hpp"
#include "transport/http_access.hpp"
#include "transport/legacy_http_sessions.hpp"
#include "transport/mcp_http_headers.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gatehouse::transport {

// What every HTTP connection of one transport shares.
struct HttpService {
    // `page_form_tokens`: seals the cross-site tokens of pages' forms; shared
    // with the other instances of a cluster through its keys. Null: a key
    // of this process only.
    HttpService(protocol::McpServer& server, const plugins::LiveRegistry& registry, config::HttpSettings settings,
                config::Limits limits, config::AuthSettings auth = {},
                std::shared_ptr<const mrtr::RequestStateSealer> page_form_tokens = nullptr);

    protocol::McpServer& server;
    const plugins::LiveRegistry& registry;
    const config::HttpSettings settings;
    const std::string instance_header; // "Gatehouse-Instance: <name>\r\n", or empty
    const config::Limits limits;
    const HttpAccess access;
    const config::AuthSettings auth_settings;
    const auth::Principal principal; // the caller under auth.mode none: the local user
    LegacyHttpSessions legacy_sessions;
    const std::shared_ptr<const mrtr::RequestStateSealer> page_form_tokens;
    // Who may scrape GET /metrics without a token (metrics.allow).
    const metrics::AddressAllowList metrics_allow;

    std::atomic<bool> draining{false};
    std::atomic<unsigned> connections{0};
    std::atomic<unsigned> streams{0};   // SSE responses open now
    std::atomic<unsigned> exchanges{0}; // requests accepted and not yet answered
    // Connections writing their answers or lingering after them: the drain waits for them.
    std::atomic<unsigned> finishing{0};
    // Connections told to drain whose loop has not yet run that: until it
    // has, a connection about to close gracefully (and count as finishing)
    // may still count as idle.
    std::atomic<unsigned> drains_pending{0};

    // Claims an SSE slot for `principal`: one of max_streams in all and of
    // max_streams_per_principal for the caller.
    enum class StreamClaim { granted, server_full, principal_full };
    StreamClaim claim_stream(const std::string& principal);
    void release_stream(const std::string& principal);

    // Runs a call answer() handed back, where place_http_call decides
    // (transport/call_placement.hpp): the loop of the connection that read it,
    // or the worker pool. A call for the loop goes into `after_handler` when
    // the caller offers one (the handler that read the request runs it as
    // its last act), and is posted to `connection` otherwise.
    void run_call(protocol::ReadyCall call, const boost::asio::any_io_executor& connection,
                  std::function<void()>* after_handler = nullptr);

    // Runs work that waits on the shared session store outside a call
    // (a 2025-11-25 session shared through it: finding, opening and ending
    // it, recording its handshake, relaying a client's response, probing it
    // for /ready), where kSharedSessionWork decides (call_placement.hpp):
    // never on an I/O thread. Only while legacy_sessions.shared().
    void run_shared_session_work(std::function<void()> work);

    // Runs a family's page (show or act) where kPageWork decides
    // (call_placement.hpp): never on an I/O thread. False, and `work` not
    // run, when kMostPagesWaiting pages already wait for a worker.
    bool run_page_work(std::function<void()> work);
    std::atomic<unsigned> pages_waiting{0};

    // Why requests cannot be served now (the state backend or the bus
    // does not answer), or nothing: GET /ready.
    std::optional<std::string> readiness();
    // readiness() on the shared-session workers, `done` called there with
    // its answer. One probe runs at a time: whoever asks while it runs gets
    // its answer, so a crowd of askers costs one round trip to Redis and
    // holds one worker, however slow Redis is.
    void probe_readiness(std::function<void(std::optional<std::string>)> done);

private:
    std::mutex streams_mutex_;
    std::map<std::string, unsigned> streams_by_principal_;
    std::mutex probe_mutex_;
    // Who waits for the probe running now; empty: none runs.
    std::vector<std::function<void(std::optional<std::string>)>> probe_waiters_;

public:
    // One event loop per I/O thread (http.threads); the first also accepts,
    // drains and stops. A connection lives on one loop for its whole life, so
    // its handlers never run at once without a strand, and nothing one
    // request does wakes another I/O thread. Near the end, so they go early:
    // handlers they still hold release connections while everything they
    // count on is alive.
    std::vector<std::unique_ptr<boost::asio::io_context>> loops;
    boost::asio::io_context& io() { return *loops.front(); }
    // The loop for the next accepted connection (round robin).
    boost::asio::io_context& next_loop();
    std::atomic<unsigned> next_loop_{0};
    // The host's state (sessions, rate limits, families' state) and its bus
    // are in Redis: calls wait on it (place_http_call).
    const bool state_in_redis;
    // After io, so it goes before: the calls it still holds keep connections.
    auth::RequestAuthenticator authenticator;
    // Workers of their own for run_shared_session_work (made when sessions
    // are shared): on the call pool, a client's answer to an elicitation
    // could wait behind the very calls that wait for it. After the loops,
    // so it stops (finishing its jobs) while they still exist.
    std::unique_ptr<protocol::RequestPool> shared_session_workers;
    // Workers of their own for pages (kPageWork), started on the first page.
    // After the loops, as shared_session_workers.
    protocol::RequestPool page_workers{kPageWorkers};
};

} // namespace gatehouse::transport
