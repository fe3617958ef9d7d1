#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gatehouse::mrtr {

// The requests the host sent a 2025-11-25 client in the middle of one of the
// client's own requests (elicitation/create, sampling/createMessage,
// roots/list), each waiting for the client's response. One per connection;
// thread-safe: a worker waits while the transport's reader delivers.
//
// Ids are strings unique to this table ("<random prefix>-<n>"), never a
// bare counter: a session shared by several instances has one copy of its
// connection on each, and every copy hears every response the client sends
// (relayed over the bus). Only the copy that issued an id finds it here; a
// response to another copy's question is nobody's answer on this one.
class ClientRequests {
public:
    struct Pending {
        std::mutex mutex;
        std::condition_variable arrived;
        std::optional<nlohmann::json> response; // the whole JSON-RPC response
    };

    // A fresh request id, unique across instances, and the place its
    // response will arrive.
    std::pair<nlohmann::json, std::shared_ptr<Pending>> expect();

    // A response from the client (a message with "result" or "error"): true
    // when a request of that id, issued by this table, was waiting for it.
    bool deliver(const nlohmann::json& response);

    // Stops waiting for `id` (answered, given up, or its request ended).
    void forget(const nlohmann::json& id);

    // The response, or nullopt once `timeout` passed or `stop` said so
    // (polled every 50 ms: a cancelled request stops waiting).
    static std::optional<nlohmann::json> wait(Pending& pending, std::chrono::milliseconds timeout,
                                              const std::function<bool()>& stop);

private:
    std::mutex mutex_;
    std::string id_prefix_; // random, drawn on the first expect(): most connections never ask the client
    std::int64_t next_id_ = 1;
    std::unordered_map<std::string, std::shared_ptr<Pending>> waiting_; // by the id's JSON text
};

} // namespace gatehouse::mrtr
