#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/call_deadlines.hpp"
#include "limits/in_flight_limits.hpp"
#include "limits/rate_limiter.hpp"
#include "plugins/tool_registry.hpp"
#include "protocol/completion.hpp"
#include "protocol/connection.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/notification_bus.hpp"
#include "protocol/prompt_get.hpp"
#include "protocol/request.hpp"
#include "protocol/request_pool.hpp"
#include "protocol/resource_read.hpp"
#include "protocol/tool_call.hpp"
#include "protocol/tool_disclosure.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <memory>
#include <string_view>

namespace gatehouse::protocol {

// The MCP method table for both revisions. Takes one framed message from a
// transport, decides its era, and answers on the connection's outbound —
// cheap methods at once on the caller's thread; whatever runs plugin code
// (tools/call, resources/read, prompts/get, completion/complete) on the pool.
class McpServer {
public:
    McpServer(const plugins::ToolRegistry& registry, const gate::GatePipeline& gate, config::ServerIdentity identity,
              config::Limits limits, RequestPool& pool, config::RateLimits rate_limits = {},
              const config::InputRequestSettings& input_requests = {},
              std::shared_ptr<const mrtr::RequestStateSealer> state_sealer = nullptr);

    // One framed message. Its answers go to `reply` when given (an HTTP
    // request's response stream), else to the connection's outbound.
    void on_message(const std::shared_ptr<Connection>& connection, std::string_view text,
                    std::shared_ptr<Outbound> reply = nullptr);

    // The same for a message its transport has already parsed (HTTP reads
    // the method to check headers before the body reaches the protocol).
    void handle(const std::shared_ptr<Connection>& connection, Json&& message, std::shared_ptr<Outbound> reply);

    // Where calls run; a transport may open an InlineSlot on it around
    // handle() to run the call on a thread of its own choosing.
    RequestPool& pool() const { return pool_; }

    // Requests accepted and not yet answered, across all connections
    // (subscriptions aside: they stay open until cancelled).
    unsigned in_flight() const { return in_flight_.total(); }

    // Where list changes and resource updates are published for the open
    // subscriptions/listen streams.
    NotificationBus& bus() { return *bus_; }

    // Which families and tools tools/list shows (progressive disclosure,
    // ToolDisclosure::apply). Applying a new exposure that changes the list
    // tells every listener.
    void apply_exposure(const std::set<std::string>& on_demand_families,
                        const std::map<std::string, bool>& tool_on_demand = {});
    const ToolDisclosure& disclosure() const { return disclosure_; }

    // Ends every open subscription gracefully (its final result), as on
    // shutdown.
    void close_subscriptions();
    std::size_t open_subscriptions();

    ~McpServer();

private:
    void on_request(const std::shared_ptr<Connection>& connection, Json&& message, std::shared_ptr<Outbound> reply);
    void on_notification(Connection& connection, const Json& message);
    Request decode_request(Connection& connection, Json&& message) const;
    Json dispatch(Request& request) const;
    Json finish(const Request& request, Json result) const;
    Json finish(const Json& id, Revision revision, Json result) const;
    Json timeout_result(const std::string& tool, const plugins::Tool* known, std::uint64_t timeout_ms) const;

    Json initialize(Request& request) const;
    Json discover(const Request& request) const;
    Json list_tools(const Request& request) const;
    Json list_resources(const Request& request) const;
    Json list_resource_templates(const Request& request) const;
    Json list_prompts(const Request& request) const;
    Json cacheable(const Request& request, Json result, bool per_token = false) const;
    Json set_log_level(Request& request) const;
    Json legacy_resource_subscription(Request& request, bool subscribe) const;
    void follow_tool_list_changes(Connection& connection) const;
    Json capabilities(Revision revision) const;

    struct Subscription;
    void open_subscription(const std::shared_ptr<Connection>& connection, Request& request);
    void end_subscription(std::uint64_t token, bool graceful);

    const plugins::ToolRegistry& registry_;
    config::ServerIdentity identity_;
    config::Limits limits_;
    limits::RateLimiter rate_limiter_;
    InputRounds input_rounds_;
    ToolDisclosure disclosure_;
    ToolCall tool_call_;
    ResourceRead resource_read_;
    PromptGet prompt_get_;
    Completion completion_;
    RequestPool& pool_;
    Json server_info_;
    limits::InFlightLimits in_flight_;
    std::shared_ptr<NotificationBus> bus_ = std::make_shared<NotificationBus>();
    std::mutex subscriptions_mutex_;
    std::map<std::uint64_t, std::shared_ptr<Subscription>> subscriptions_;
    limits::CallDeadlines deadlines_; // last: its thread stops before the rest its actions use
};

// True when `text` nests arrays/objects deeper than `limit` (strings skipped).
bool nests_deeper_than(std::string_view text, std::size_t limit);

} // namespace gatehouse::protocol
