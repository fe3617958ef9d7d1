#pragma once

#include "protocol/connection.hpp"
#include "state/notification_bus.hpp"
#include "protocol/request.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace gatehouse::protocol {

using state::Change;
using state::NotificationBus;

// What a client follows: 2026-07-28 subscriptions/listen streams, and the
// 2025-11-25 connection's own channel (resources/subscribe, tool list
// changes). Every change comes from the bus.
class Subscriptions {
public:
    // `capabilities`: what 2026-07-28 offers (a listen honours only what
    // it offers). `max_open`: subscriptions open at once, at most.
    // `capabilities`: the server's now (what a listen may ask for follows the registry).
    Subscriptions(std::shared_ptr<NotificationBus> bus, std::function<Json()> capabilities, Json server_info,
                  std::size_t max_open);
    ~Subscriptions();

    // subscriptions/listen: acknowledges, then delivers until cancelled or
    // closed. Throws ProtocolError for a malformed filter or when full.
    void open(const std::shared_ptr<Connection>& connection, Request& request);
    // Ends every open subscription gracefully (its final result), as on shutdown.
    void close_all();
    std::size_t open_count();

    // 2025-11-25 resources/subscribe and resources/unsubscribe.
    Json follow_resource(Request& request, bool subscribe);
    // The same for exactly `uris`, as a connection's record says.
    void follow_resources(Connection& connection, const std::set<std::string>& uris);
    // 2025-11-25: tools/, prompts/ and resources/list_changed on the
    // connection's own channel for as long as it lives (from initialize).
    void follow_list_changes(Connection& connection);

    NotificationBus& bus() { return *bus_; }
    const std::shared_ptr<NotificationBus>& shared_bus() const { return bus_; }

    // How a listen's notifications.taskIds are checked: the caller's tasks
    // among them, to follow (tasks::TaskCalls::follow). Unset: none is.
    using TaskFilter = std::function<Json(const Request&, const Json&)>;
    void follow_tasks_with(TaskFilter filter) { task_filter_ = std::move(filter); }

private:
    struct Subscription;
    void end(std::uint64_t token, bool graceful);
    bool set_following(Connection& connection, const std::string& uri, bool follow);

    std::shared_ptr<NotificationBus> bus_;
    TaskFilter task_filter_;
    const std::function<Json()> capabilities_;
    const Json server_info_;
    const std::size_t max_open_;
    std::mutex mutex_;
    std::map<std::uint64_t, std::shared_ptr<Subscription>> subscriptions_;
};

} // namespace gatehouse::protocol
