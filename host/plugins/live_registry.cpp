#include "plugins/live_registry.hpp"

#include <stdexcept>

namespace gatehouse::plugins {

RegistryChanges changes_between(const ToolRegistry& before, const ToolRegistry& after) {
    RegistryChanges changes;
    changes.tools = before.fingerprint() != after.fingerprint();
    changes.resources = before.resources_fingerprint() != after.resources_fingerprint() ||
                        before.resource_templates_fingerprint() != after.resource_templates_fingerprint();
    changes.prompts = before.prompts_fingerprint() != after.prompts_fingerprint();
    return changes;
}

LiveRegistry::LiveRegistry(std::shared_ptr<const ToolRegistry> first) : current_(std::move(first)) {}

void LiveRegistry::publish(std::shared_ptr<const ToolRegistry> next, const std::unique_lock<std::mutex>& held) {
    if (held.mutex() != &changing_ || !held.owns_lock())
        throw std::logic_error("LiveRegistry::publish needs change_lock()");
    if (closed_) return;
    const auto before = current_.exchange(next, std::memory_order_acq_rel);
    const RegistryChanges changes = changes_between(*before, *next);
    for (const auto& watcher : watchers_)
        watcher(*next, changes);
}

void LiveRegistry::watch(Watcher watcher) {
    std::lock_guard lock(changing_);
    watchers_.push_back(std::move(watcher));
}

void LiveRegistry::close() {
    std::lock_guard lock(changing_);
    closed_ = true;
    watchers_.clear();
}

bool LiveRegistry::closed(const std::unique_lock<std::mutex>& held) const {
    return held.mutex() == &changing_ && held.owns_lock() ? closed_ : true;
}

} // namespace gatehouse::plugins
