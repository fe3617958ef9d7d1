#include "transport/http_service.hpp"

#include "transport/call_placement.hpp"
#include "transport/http_connection.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

namespace gatehouse::transport {

HttpService::HttpService(protocol::McpServer& server_, const plugins::LiveRegistry& registry_,
                         config::HttpSettings settings_, config::Limits limits_, config::AuthSettings auth_,
                         std::shared_ptr<const mrtr::RequestStateSealer> page_form_tokens_)
    : server(server_), registry(registry_), settings(std::move(settings_)),
      instance_header(settings.instance_name.empty() ? "" : "Gatehouse-Instance: " + settings.instance_name + "\r\n"),
      limits(limits_), access(settings), auth_settings(std::move(auth_)), principal(auth::local_principal()),
      legacy_sessions(settings.max_legacy_sessions, settings.max_legacy_sessions_per_principal,
                      std::chrono::seconds(settings.legacy_session_idle_s)),
      page_form_tokens(page_form_tokens_ ? std::move(page_form_tokens_)
                                         : std::make_shared<const mrtr::RequestStateSealer>(
                                               std::vector<std::string>{}, "gatehouse", std::chrono::minutes(10))),
      metrics_allow(server.observability() ? server.observability()->metrics_settings().allow
                                           : std::vector<std::string>{}),
      state_in_redis(server.bus().shared()), authenticator(auth_settings, settings) {
    // Declared before the authenticator, the loops are built after it; they
    // are filled here so each gets the hint that one thread runs it.
    for (unsigned i = 0; i < std::max(1u, settings.threads); ++i)
        loops.push_back(std::make_unique<boost::asio::io_context>(1));
    // 2025-11-25 sessions cross instances when what they need does: a state
    // backend and a bus shared with the others (Redis).
    if (const auto* host = server.host(); host && host->family_state && server.bus().shared()) {
        legacy_sessions.share(*host->family_state, server.bus(), server, &make_legacy_connection);
        shared_session_workers = std::make_unique<protocol::RequestPool>(kSharedSessionWorkers);
    }
}

std::optional<std::string> HttpService::readiness() {
    return server.readiness();
}

void HttpService::probe_readiness(std::function<void(std::optional<std::string>)> done) {
    {
        std::lock_guard lock(probe_mutex_);
        probe_waiters_.push_back(std::move(done));
        if (probe_waiters_.size() > 1) return; // the probe running answers this one too
    }
    run_shared_session_work([this] {
        std::optional<std::string> problem;
        try {
            problem = readiness();
        } catch (const std::exception& e) {
            problem = std::string("the state backend does not answer: ") + e.what();
        }
        std::vector<std::function<void(std::optional<std::string>)>> waiters;
        {
            std::lock_guard lock(probe_mutex_);
            waiters.swap(probe_waiters_);
        }
        for (auto& waiter : waiters)
            waiter(problem);
    });
}

HttpService::StreamClaim HttpService::claim_stream(const std::string& principal) {
    std::lock_guard lock(streams_mutex_);
    if (streams.load() >= settings.max_streams) return StreamClaim::server_full;
    unsigned& mine = streams_by_principal_[principal];
    if (mine >= settings.max_streams_per_principal) return StreamClaim::principal_full;
    ++mine;
    ++streams;
    return StreamClaim::granted;
}

boost::asio::io_context& HttpService::next_loop() {
    return *loops[next_loop_.fetch_add(1, std::memory_order_relaxed) % loops.size()];
}

void HttpService::run_call(protocol::ReadyCall call, const boost::asio::any_io_executor& connection,
                           std::function<void()>* after_handler) {
    switch (place_http_call(call, loops.size(), state_in_redis)) {
    case CallSite::io_loop:
        if (after_handler && !*after_handler) {
            *after_handler = std::move(call.run);
            return;
        }
        // Posted from the connection's own loop thread, it runs there after
        // the current handler returns, and after every handler already
        // queued on the loop.
        boost::asio::post(connection, std::move(call.run));
        return;
    default: server.pool().submit(std::move(call.run)); return;
    }
}

void HttpService::run_shared_session_work(std::function<void()> work) {
    static_assert(kSharedSessionWork == CallSite::shared_session_workers, "shared session work has one place");
    if (!shared_session_workers) throw std::logic_error("shared session work without shared sessions");
    shared_session_workers->submit(std::move(work));
}

bool HttpService::run_page_work(std::function<void()> work) {
    static_assert(kPageWork == CallSite::page_workers, "a page has one place");
    if (pages_waiting.fetch_add(1) >= kMostPagesWaiting) {
        --pages_waiting;
        return false;
    }
    try {
        page_workers.submit([this, work = std::move(work)] {
            --pages_waiting;
            work();
        });
    } catch (...) {
        --pages_waiting;
        throw;
    }
    return true;
}

void HttpService::release_stream(const std::string& principal) {
    std::lock_guard lock(streams_mutex_);
    auto it = streams_by_principal_.find(principal);
    if (it != streams_by_principal_.end() && --it->second == 0) streams_by_principal_.erase(it);
    --streams;
}

} // namespace gatehouse::transport
