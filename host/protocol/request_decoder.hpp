#pragma once

#include "plugins/host_services.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/request.hpp"
#include "protocol/tool_disclosure.hpp"

#include <string>
#include <string_view>

namespace gatehouse::protocol {

// One message as the protocol reads it, once, at the edge: the envelope
// checked and, for a request, everything downstream needs decoded into a
// Request (revision, _meta, and for tools/call the resolved tool).
struct Incoming {
    enum class Kind { request, notification, response, invalid };
    Kind kind = Kind::invalid;
    Request request; // Kind::request, when `error` is null
    Json message;    // Kind::notification and Kind::response: the message as sent
    // The JSON-RPC error to answer instead (Kind::invalid, or a request that
    // failed to decode); null otherwise.
    Json error;
    // The error is about the request's _meta, params or revision, which a
    // 2026-07-28 HTTP transport answers 400 (Outbound::reject); else it is
    // an ordinary answer (Outbound::send).
    bool rejected = false;
};

// Decodes messages for one host. Thread-safe: it reads the registry serving
// now (each call keeps the one its tool was found in) and the disclosure's
// own lock.
class RequestDecoder {
public:
    // `trace_ids`: where requests' span ids come from (null: requests carry no trace).
    RequestDecoder(const plugins::LiveRegistry& registry, const ToolDisclosure& disclosure,
                   const plugins::HostServices* host, metrics::TraceIds* trace_ids = nullptr)
        : registry_(registry), disclosure_(disclosure), host_(host), trace_ids_(trace_ids) {}

    // `sender`: who sent the message, as its transport authenticated it; a
    // request is authorised as `sender` (Request::principal), whoever
    // opened `connection`.
    Incoming read(Connection& connection, const auth::Principal& sender, Json&& message,
                  TransportTrace transport_trace = {}) const;

    // The tool a tools/call names in `registry`: a family's own first, else
    // a host meta tool of that name (while some family is on demand); null
    // when none.
    const plugins::Tool* resolve(const plugins::ToolRegistry& registry, std::string_view name) const;

    // The target of a tools/call whose params are `params` (name and
    // arguments moved out); throws ProtocolError (-32602) for a missing name,
    // an unknown tool or arguments that are not an object.
    ToolTarget target(Json& params, const auth::Principal& principal) const;

    // The target of a call of `tool` already resolved in `registry`
    // (call_tool's forwarded call): its own forwarded tool, if it is
    // call_tool, and its scope verdict.
    ToolTarget target_of(std::shared_ptr<const plugins::ToolRegistry> registry, const plugins::Tool& tool,
                         Json arguments, const auth::Principal& principal) const;

private:
    // Fills `into` from the message's members (moved out of it) in message
    // order (id, method, params first), so what was read before a
    // ProtocolError stays for the transport's checks. `params`: null when
    // the message has none.
    void decode(Connection& connection, Json& id, Json& method, Json* params, Request& into) const;
    // The request's span: in the trace its _meta names, else the one its
    // transport's headers name, else a trace of its own. A malformed
    // traceparent is ignored, as W3C Trace Context asks.
    void start_trace(const Json* meta, TransportTrace transport_trace, Request& into) const;

    const plugins::LiveRegistry& registry_;
    const ToolDisclosure& disclosure_;
    const plugins::HostServices* host_;
    metrics::TraceIds* trace_ids_;
};

// The protocol versions this host speaks, as server/discover and -32022 list them.
Json supported_versions();

// A name as an error message may echo it: valid tool names are at most 64
// characters, so anything longer is cut (at a character boundary).
std::string echoed_name(const std::string& name);

} // namespace gatehouse::protocol
