#pragma once

#include "plugins/tool_registry.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gatehouse::plugins {

// Which published lists differ between two registries.
struct RegistryChanges {
    bool tools = false;
    bool resources = false; // resources or resource templates
    bool prompts = false;
    bool any() const { return tools || resources || prompts; }
};
RegistryChanges changes_between(const ToolRegistry& before, const ToolRegistry& after);

// The registry a host serves now. Readers take current() and keep what it
// returns while they use what they found in it; a family that joins, leaves
// or lists anew makes a whole new ToolRegistry, swapped in by publish(), so
// a call that started keeps the tools it started with and no reader ever
// sees half a change. Changes are made one at a time (change_lock()), and
// each one is told to every watcher, on the thread that made it.
class LiveRegistry {
public:
    explicit LiveRegistry(std::shared_ptr<const ToolRegistry> first);
    LiveRegistry(const LiveRegistry&) = delete;
    LiveRegistry& operator=(const LiveRegistry&) = delete;

    std::shared_ptr<const ToolRegistry> current() const { return current_.load(std::memory_order_acquire); }

    // Held while a change is worked out from current() and published, so
    // two changes never start from the same registry.
    std::unique_lock<std::mutex> change_lock() { return std::unique_lock(changing_); }

    // Swaps `next` in (under change_lock()) and tells the watchers what
    // changed. After close() it is dropped.
    using Watcher = std::function<void(const ToolRegistry& now, const RegistryChanges& changes)>;
    void publish(std::shared_ptr<const ToolRegistry> next, const std::unique_lock<std::mutex>& held);
    // Watchers are added before the host serves and dropped by close().
    void watch(Watcher watcher);
    // No change is published after it returns (the host is being taken down).
    void close();
    bool closed(const std::unique_lock<std::mutex>& held) const;

private:
    std::atomic<std::shared_ptr<const ToolRegistry>> current_;
    std::mutex changing_;
    std::vector<Watcher> watchers_; // under changing_
    bool closed_ = false;           // under changing_
};

} // namespace gatehouse::plugins
