#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace gatehouse::config {
struct RedisSettings;
}

namespace gatehouse::state {

class RedisClient;

// What changed, as the list-changed and resource-updated notifications say,
// and what became of a task (tasks/).
struct Change {
    enum class Kind { tools_list, prompts_list, resources_list, resource_updated, task_status, task_cancel };
    Kind kind;
    std::string uri;         // resource_updated: the resource; task_status, task_cancel: the task's id
    std::string detail = {}; // task_status: the task as notifications/tasks carries it (JSON text)
};

// A message from a 2025-11-25 client, received by one instance, for the
// instance doing that session's work: the client's answer to a request the
// host sent it, a cancellation, the session's record changed or ended.
// `body` is the JSON text; the receiving transport reads it.
struct SessionMessage {
    std::string session; // the Mcp-Session-Id
    std::string body;
};

// Fans changes out to every open subscription: of this process (this class
// itself, the default), or of every instance sharing a Redis
// (make_redis_bus). Thread-safe.
class NotificationBus {
public:
    using Listener = std::function<void(const Change&)>;
    using SessionListener = std::function<void(const SessionMessage&)>;

    virtual ~NotificationBus() = default;

    // Listeners run on the publishing thread (or the bus's own, for changes
    // from other instances) and must not block.
    std::uint64_t subscribe(Listener listener);
    void unsubscribe(std::uint64_t token);
    // Listeners subscribed now: what a change is copied to, each time.
    std::size_t listener_count();

    // To every listener, here and on every instance sharing the bus.
    virtual void publish(const Change& change) { deliver(change); }

    // To the other instances only: the one relaying has handled the message
    // already. On one process there is nobody else. False when the message
    // could not be sent (the shared bus is down): it reached no one.
    virtual bool relay(const SessionMessage&) { return true; }
    // Where messages relayed by other instances go (one listener: the HTTP
    // transport's 2025-11-25 sessions); empty to stop.
    void on_session_message(SessionListener listener);

    // False: changes reach this process only.
    virtual bool shared() const { return false; }

    // Why changes do not reach the other instances now, or nothing.
    virtual std::optional<std::string> trouble() { return std::nullopt; }

protected:
    void deliver(const Change& change);
    void deliver(const SessionMessage& message);

private:
    std::mutex mutex_;
    std::uint64_t next_ = 1;
    std::unordered_map<std::uint64_t, Listener> listeners_;
    std::mutex session_mutex_;
    SessionListener session_listener_;
};

// A bus on Redis pub/sub (one channel, <key_prefix>bus): what one instance
// publishes reaches the listeners of all. Its subscriber runs on a thread of
// its own and reconnects by itself; after a gap in which changes may have
// been missed, listeners are told every list changed, so clients re-list.
// Throws BackendError when Redis cannot be reached at start.
std::shared_ptr<NotificationBus> make_redis_bus(const config::RedisSettings& settings);
// The same on a client the host shares with its other Redis parts (the
// subscription still has a connection of its own).
std::shared_ptr<NotificationBus> make_redis_bus(std::shared_ptr<RedisClient> redis);

} // namespace gatehouse::state
