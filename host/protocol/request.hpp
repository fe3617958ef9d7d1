#pragma once

#include "gate/refusal.hpp"
#include "plugins/host_services.hpp"
#include "plugins/tool.hpp"
#include "protocol/connection.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/revision.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace gatehouse::protocol {

// A tools/call resolved at decode (RequestDecoder): the tool params.name
// names, its arguments, and the token layer's verdict. Nothing downstream
// reads params.name or looks the tool up again.
struct ToolTarget {
    const plugins::Tool* tool = nullptr; // a family's tool, or a host meta tool; never null
    Json arguments = Json::object();     // params.arguments (an object), moved out of params
    // call_tool: the tool its arguments name, when they name one that
    // exists (its timeout and pace are the call's); else null.
    const plugins::Tool* forwarded = nullptr;
    // A verified token without the tool's scope: the refusal every route
    // to the tool meets (protocol/tool_call.hpp scope_refusal).
    std::optional<gate::Refusal> scope_refusal;
};

// One JSON-RPC request after the envelope and its era were decoded. Nothing
// downstream re-reads the raw message.
struct Request {
    Json id;
    std::string method;
    Json params = Json::object();
    Revision revision = Revision::modern_2026_07_28;
    std::optional<int> log_level; // lowest level to send as notifications/message; none: send none
    Json progress_token;          // null: no progress notifications
    Json client_capabilities = Json::object();
    std::optional<ToolTarget> call; // tools/call only
    Connection* connection = nullptr;
    // The host serving it: what a plugin reaches through the host functions.
    const plugins::HostServices* host = nullptr;
    // Where this request's notifications and answer go: the connection's own
    // outbound on stdio, the POST's response stream over HTTP.
    std::shared_ptr<Outbound> reply;
    std::shared_ptr<InFlight> in_flight;
    // The task this request is a round of (tasks/); empty for a plain request.
    std::string task_id;

    bool cancelled() const { return in_flight && in_flight->cancelled.load(std::memory_order_relaxed); }
};

// A request admitted to run plugin code, handed back to the transport that
// read it. Where it runs (the reader's thread, an I/O loop, the worker pool)
// is the transport's choice, made in one place (transport/call_placement.hpp);
// nothing captures it on the side.
struct ReadyCall {
    std::function<void()> run;
    // A call of a tool whose recent calls all returned quickly (plugins::CallPace).
    bool quick = false;
    // A 2025-11-25 call may send client requests of its own and wait for their answers.
    bool legacy = false;

    explicit operator bool() const { return static_cast<bool>(run); }
};

} // namespace gatehouse::protocol
