#pragma once

#include "protocol/connection.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/revision.hpp"

#include <memory>
#include <optional>
#include <string>

namespace gatehouse::protocol {

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
    Connection* connection = nullptr;
    // Where this request's notifications and answer go: the connection's own
    // outbound on stdio, the POST's response stream over HTTP.
    std::shared_ptr<Outbound> reply;
    std::shared_ptr<InFlight> in_flight;

    bool cancelled() const { return in_flight && in_flight->cancelled.load(std::memory_order_relaxed); }
};

} // namespace gatehouse::protocol
