#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/rate_limiter.hpp"
#include "metrics/observability.hpp"
#include "plugins/host_services.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/call_scheduler.hpp"
#include "protocol/completion.hpp"
#include "protocol/connection.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/method_table.hpp"
#include "state/notification_bus.hpp"
#include "protocol/prompt_get.hpp"
#include "protocol/request.hpp"
#include "protocol/request_decoder.hpp"
#include "protocol/request_pool.hpp"
#include "protocol/resource_read.hpp"
#include "protocol/subscriptions.hpp"
#include "protocol/tool_call.hpp"
#include "protocol/tool_disclosure.hpp"
#include "tasks/task_calls.hpp"
#include "tasks/task_runner.hpp"
#include "tasks/task_store.hpp"

#include <map>
#include <memory>
#include <set>
#include <string_view>

namespace gatehouse::session {
class SessionService;
}

namespace gatehouse::protocol {

// What a server is built with besides the registry, the gate and the pool.
struct ServerOptions {
    config::RateLimits rate_limits;
    // Where the rate limits' buckets live (null: in this process).
    std::shared_ptr<limits::BucketStore> rate_buckets;
    config::InputRequestSettings input_requests;
    // Seals multi round-trip requestState; null: made from input_requests.
    std::shared_ptr<const mrtr::RequestStateSealer> state_sealer;
    // The session services tool calls reach (null: the host has none).
    session::SessionService* sessions = nullptr;
    // What the host functions reach of this host (null: state and change
    // notifications answer as with no host).
    const plugins::HostServices* host = nullptr;
    // Where changes fan out (null: this process only).
    std::shared_ptr<NotificationBus> bus;
    // The Tasks extension: its settings, where its records live (null: a
    // memory backend of the server's own) and where tasks/get's pace is
    // counted (null: this process).
    config::TaskSettings tasks;
    state::StateBackend* task_state = nullptr;
    std::shared_ptr<limits::BucketStore> task_buckets;
    // Where requests' trace ids come from and their answers are counted,
    // audited and exported (null: none is).
    metrics::Observability* observability = nullptr;
};

// MCP for both revisions: a message in, its answer out. Decodes once
// (RequestDecoder), looks the method up in its table (MethodTable), answers
// cheap methods at once, opens subscriptions (Subscriptions), and admits
// what runs plugin code (CallScheduler), returning it for the transport to
// place.
class McpServer {
public:
    McpServer(const plugins::LiveRegistry& registry, const gate::GatePipeline& gate, config::ServerIdentity identity,
              config::Limits limits, RequestPool& pool, ServerOptions options = {});
    ~McpServer();

    // Checks the message's depth, parses it and decodes it: the edge of a
    // transport that frames text (stdio), whose connection has one caller,
    // the principal it was opened with.
    Incoming decode_text(const std::shared_ptr<Connection>& connection, std::string_view text) const;
    // Decodes a message its transport has already parsed (HTTP parses the
    // body to check headers before the protocol sees it). `sender`: who
    // sent it, as the transport authenticated this message; a request is
    // authorised as `sender`, not as whoever opened the connection (over
    // HTTP, a 2025-11-25 session's requests each bring their own token).
    // `transport_trace`: the trace context its transport carried (HTTP headers).
    Incoming decode(const std::shared_ptr<Connection>& connection, const auth::Principal& sender, Json&& message,
                    TransportTrace transport_trace = {}) const;

    // Answers a decoded message, to `reply` when given (an HTTP request's
    // response stream), else to the connection's outbound. A request that
    // runs plugin code comes back, admitted, for the transport to place
    // (transport/call_placement.hpp); everything else is answered here.
    [[nodiscard]] ReadyCall answer(const std::shared_ptr<Connection>& connection, Incoming&& incoming,
                                   std::shared_ptr<Outbound> reply = nullptr);

    // decode then answer, a call run on the worker pool: for a caller with
    // no thread of its own to offer. The sender is the connection's
    // principal: for a connection with one caller, or for the responses and
    // notifications of any (they are authorised by nothing but the session).
    void on_message(const std::shared_ptr<Connection>& connection, std::string_view text,
                    std::shared_ptr<Outbound> reply = nullptr);
    void handle(const std::shared_ptr<Connection>& connection, Json&& message, std::shared_ptr<Outbound> reply);

    // What the host functions reach of this host (pages' calls need it too).
    const plugins::HostServices* host() const { return host_; }

    // What operators see of this host (null: nothing is counted).
    metrics::Observability* observability() const { return observability_; }

    // Why requests cannot be served now (the state backend or the bus does
    // not answer), or nothing: what GET /ready reports.
    std::optional<std::string> readiness() const;

    // Where calls the transport does not run itself go.
    RequestPool& pool() const { return pool_; }

    // Requests accepted and not yet answered, across all connections
    // (subscriptions aside: they stay open until cancelled).
    unsigned in_flight() const { return scheduler_.in_flight(); }

    // Where list changes and resource updates are published for the open
    // subscriptions/listen streams.
    NotificationBus& bus() { return subscriptions_.bus(); }

    // A 2025-11-25 connection's handshake as a record, and a connection
    // brought to a record: how a session lives on several instances
    // (transport::LegacyHttpSessions).
    static Json legacy_record(Connection& connection);
    void resume_legacy(Connection& connection, const Json& record);

    // Which families and tools tools/list shows (progressive disclosure,
    // ToolDisclosure::apply). Applying a new exposure that changes the list
    // tells every listener.
    void apply_exposure(const std::set<std::string>& on_demand_families,
                        const ToolDisclosure::ToolExposure& tool_on_demand = {});
    const ToolDisclosure& disclosure() const { return disclosure_; }
    // A family joined, left or listed anew (LiveRegistry's watcher): the
    // tool list is made again under the same exposure, and every listener
    // hears of each list that changed.
    void registry_changed(const plugins::RegistryChanges& changes);

    // Ends every open subscription gracefully (its final result), as on shutdown.
    void close_subscriptions() { subscriptions_.close_all(); }
    // Stops the tasks' rounds (each record says the host stopped); true when
    // every round ended within `grace`.
    bool stop_tasks(std::chrono::milliseconds grace) { return task_runner_->stop(grace); }
    // Until every tool call answered later has been (CallScheduler::await_later_answers).
    bool await_later_answers(std::chrono::milliseconds grace) { return scheduler_.await_later_answers(grace); }
    std::size_t open_subscriptions() { return subscriptions_.open_count(); }

private:
    MethodTable method_table();
    void on_notification(Connection& connection, const Json& message);
    Json dispatch(Request& request, const MethodTable::Method& method) const;
    // What `handled` answers, finished for the request's revision, or the
    // error it throws as a JSON-RPC error; nothing when its answer comes later.
    Json finished(Request& request, const std::function<Json()>& handled) const;
    Json finish(const Json& id, Revision revision, Json result) const;
    // Counts (and for a tool call audits and exports) an answered request.
    void observe(const Request& request, const Json& response) const;
    void observe_admitted(const CallScheduler::Admitted& call, const CallScheduler::Ending& ending) const;

    Json initialize(Request& request);
    Json discover(const Request& request) const;
    Json list_tools(const Request& request) const;
    Json list_resources(const Request& request) const;
    Json list_resource_templates(const Request& request) const;
    Json list_prompts(const Request& request) const;
    Json cacheable(const Request& request, Json result, bool per_token = false) const;
    Json set_log_level(Request& request) const;
    Json capabilities(Revision revision, bool tasks) const;

    const plugins::LiveRegistry& registry_;
    config::ServerIdentity identity_;
    config::Limits limits_;
    RequestPool& pool_;
    const plugins::HostServices* host_;
    metrics::Observability* observability_;
    Json server_info_;
    // A 2026-07-28 result's whole `_meta` when nothing else is in it (most
    // results): the server's identity, written once (protocol::written_json).
    const Json identity_meta_;
    // The same as written members of a result, with its resultType: what a
    // 2026-07-28 answer puts first in a result passed on as text.
    const std::string modern_result_members_;
    limits::RateLimiter rate_limiter_;
    InputRounds input_rounds_;
    ToolDisclosure disclosure_;
    RequestDecoder decoder_;
    ToolCall tool_call_;
    ResourceRead resource_read_;
    PromptGet prompt_get_;
    Completion completion_;
    Subscriptions subscriptions_;
    std::unique_ptr<state::StateBackend> own_task_state_;
    std::unique_ptr<tasks::TaskStore> task_store_;
    std::unique_ptr<tasks::TaskRunner> task_runner_; // after tool_call_: its rounds end before what they use
    std::unique_ptr<tasks::TaskCalls> tasks_;
    const MethodTable methods_;
    CallScheduler scheduler_; // last: its deadline thread stops before the rest its actions use
};

} // namespace gatehouse::protocol
