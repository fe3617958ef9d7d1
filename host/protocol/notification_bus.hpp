#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gatehouse::protocol {

// What changed, as the list-changed and resource-updated notifications say.
struct Change {
    enum class Kind { tools_list, prompts_list, resources_list, resource_updated };
    Kind kind;
    std::string uri; // resource_updated only
};

// Fans changes out to every open subscription of this process. The
// interface is what a shared backend (Redis pub/sub) would implement to fan
// out across instances: publish, subscribe, unsubscribe.
class NotificationBus {
public:
    using Listener = std::function<void(const Change&)>;

    virtual ~NotificationBus() = default;

    // Listeners run on the publishing thread and must not block.
    virtual std::uint64_t subscribe(Listener listener);
    virtual void unsubscribe(std::uint64_t token);
    virtual void publish(const Change& change);

private:
    std::mutex mutex_;
    std::uint64_t next_ = 1;
    std::unordered_map<std::uint64_t, Listener> listeners_;
};

} // namespace gatehouse::protocol
