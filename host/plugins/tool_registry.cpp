#include "plugins/tool_registry.hpp"

#include <algorithm>
#include <functional>

namespace gatehouse::plugins {

const char* risk_name(Risk risk) {
    switch (risk) {
    case Risk::read: return "read";
    case Risk::write: return "write";
    case Risk::money: return "money";
    case Risk::destructive: return "destructive";
    }
    return "read";
}

ToolRegistry::~ToolRegistry() {
    // Tools point into their plugins' memory: drop them before unloading.
    by_name_.clear();
    ordered_.clear();
    tools_.clear();
    // Unload in reverse order of loading.
    while (!plugins_.empty())
        plugins_.pop_back();
}

const Tool* ToolRegistry::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

void ToolRegistry::add_family(std::unique_ptr<LoadedPlugin> plugin, std::vector<std::unique_ptr<Tool>> tools,
                              std::string prefix) {
    FamilyInfo info{plugin->family(),  plugin->name(),  plugin->version(),   plugin->path().string(),
                    std::move(prefix), plugin->rules(), plugin->reentrant(), {}};
    for (auto& t : tools) {
        t->plugin = plugin.get();
        info.tools.push_back(t.get());
        tools_.push_back(std::move(t));
    }
    families_.push_back(std::move(info));
    plugins_.push_back(std::move(plugin));
}

void ToolRegistry::freeze() {
    ordered_.clear();
    by_name_.clear();
    for (const auto& t : tools_)
        ordered_.push_back(t.get());
    std::sort(ordered_.begin(), ordered_.end(), [](const Tool* a, const Tool* b) { return a->name < b->name; });
    std::string all;
    for (const Tool* t : ordered_) {
        by_name_.emplace(t->name, t);
        all += t->listing.dump();
        all += '\n';
    }
    fingerprint_ = std::to_string(std::hash<std::string>{}(all)&0xffffffffu);
}

} // namespace gatehouse::plugins
