#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "limits/call_deadlines.hpp"
#include "limits/in_flight_limits.hpp"
#include "limits/rate_limiter.hpp"
#include "plugins/tool_registry.hpp"
#include "protocol/connection.hpp"
#include "protocol/request.hpp"
#include "protocol/request_pool.hpp"
#include "protocol/tool_call.hpp"

#include <atomic>
#include <memory>
#include <string_view>

namespace gatehouse::protocol {

// The MCP method table for both revisions. Takes one framed message from a
// transport, decides its era, and answers on the connection's outbound —
// cheap methods at once on the caller's thread, tool calls on the pool.
class McpServer {
public:
    McpServer(const plugins::ToolRegistry& registry, const gate::GatePipeline& gate, config::ServerIdentity identity,
              config::Limits limits, RequestPool& pool, config::RateLimits rate_limits = {});

    void on_message(const std::shared_ptr<Connection>& connection, std::string_view text);

    // Requests accepted and not yet answered, across all connections.
    unsigned in_flight() const { return in_flight_.total(); }

private:
    void on_request(const std::shared_ptr<Connection>& connection, Json&& message);
    void on_notification(Connection& connection, const Json& message);
    Request decode_request(Connection& connection, Json&& message) const;
    Json dispatch(Request& request) const;
    Json finish(const Request& request, Json result) const;
    Json finish(const Json& id, Revision revision, Json result) const;
    Json timeout_result(const std::string& tool, const plugins::Tool* known, std::uint64_t timeout_ms) const;

    Json initialize(Request& request) const;
    Json discover(const Request& request) const;
    Json list_tools(const Request& request) const;
    Json set_log_level(Request& request) const;
    Json capabilities(Revision revision) const;

    const plugins::ToolRegistry& registry_;
    config::ServerIdentity identity_;
    config::Limits limits_;
    limits::RateLimiter rate_limiter_;
    ToolCall tool_call_;
    RequestPool& pool_;
    Json server_info_;
    limits::InFlightLimits in_flight_;
    limits::CallDeadlines deadlines_; // last: its thread stops before the rest its actions use
};

// True when `text` nests arrays/objects deeper than `limit` (strings skipped).
bool nests_deeper_than(std::string_view text, std::size_t limit);

} // namespace gatehouse::protocol
