#include "plugins/tool_registry.hpp"

#include "upstream/upstream_family.hpp"

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

namespace {

template <class Item> std::string fingerprint_of(const std::vector<const Item*>& items) {
    std::string all;
    for (const Item* item : items) {
        all += item->listing.dump();
        all += '\n';
    }
    return std::to_string(std::hash<std::string>{}(all)&0xffffffffu);
}

} // namespace

FamilyEntry::~FamilyEntry() {
    // Tools and the rest point into their plugin's memory (or the listing's):
    // drop them before it goes.
    offer = {};
    tools.clear();
}

ToolRegistry::~ToolRegistry() {
    by_name_.clear();
    ordered_.clear();
    // Families go in reverse order of loading (a family another one still
    // holds stays for it).
    plugins_.clear();
    while (!entries_.empty())
        entries_.pop_back();
}

const FamilyEntry* ToolRegistry::entry(std::string_view family) const {
    for (const auto& e : entries_)
        if (e->info.family == family) return e.get();
    return nullptr;
}

const Tool* ToolRegistry::find(std::string_view name) const {
    lookups_.fetch_add(1, std::memory_order_relaxed);
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

const Resource* ToolRegistry::find_resource(std::string_view uri) const {
    auto it = std::lower_bound(resources_.begin(), resources_.end(), uri,
                               [](const Resource* r, std::string_view u) { return r->uri < u; });
    return it != resources_.end() && (*it)->uri == uri ? *it : nullptr;
}

const ResourceTemplate* ToolRegistry::find_resource_template(std::string_view uri_template) const {
    for (const auto* t : resource_templates_)
        if (t->uri_template.text() == uri_template) return t;
    return nullptr;
}

const Prompt* ToolRegistry::find_prompt(std::string_view name) const {
    auto it = std::lower_bound(prompts_.begin(), prompts_.end(), name,
                               [](const Prompt* p, std::string_view n) { return p->name < n; });
    return it != prompts_.end() && (*it)->name == name ? *it : nullptr;
}

const Page* ToolRegistry::find_page(std::string_view family, std::string_view name) const {
    for (const Page* page : pages_)
        if (page->family == family && page->name == name) return page;
    return nullptr;
}

bool ToolRegistry::offers_completions() const {
    return std::any_of(prompts_.begin(), prompts_.end(), [](const Prompt* p) { return p->complete != nullptr; }) ||
           std::any_of(resource_templates_.begin(), resource_templates_.end(),
                       [](const ResourceTemplate* t) { return t->complete != nullptr; });
}

std::optional<WaitingUpstream> upstream_waiting_for(const ToolRegistry& registry, std::string_view name) {
    for (const auto& e : registry.entries()) {
        const auto* upstream = e->plugin->upstream();
        if (!upstream || !e->tools.empty() || !upstream->could_have_named(name) || upstream->serving()) continue;
        return WaitingUpstream{e->info.family, upstream->why_not_serving(), upstream->retry_after_ms() + 100};
    }
    return std::nullopt;
}

std::shared_ptr<const FamilyEntry> make_family_entry(std::shared_ptr<LoadedPlugin> plugin,
                                                     std::vector<std::unique_ptr<Tool>> tools, std::string prefix,
                                                     FamilyOffer offer, std::shared_ptr<const void> listing) {
    auto entry = std::make_shared<FamilyEntry>();
    FamilyInfo info;
    info.family = plugin->family();
    info.plugin_name = plugin->name();
    info.version = plugin->version();
    info.path = plugin->path().string();
    info.prefix = std::move(prefix);
    info.rules = plugin->rules();
    info.reentrant = plugin->reentrant();
    for (auto& t : tools) {
        t->plugin = plugin.get();
        info.tools.push_back(t.get());
    }
    info.store_credentials = plugin->store_credentials();
    info.own_process = plugin->process() != nullptr;
    if (const auto* upstream = plugin->upstream()) {
        info.upstream = upstream->describe();
        info.upstream_protocol = upstream->protocol_version();
    }
    info.resources = offer.resources.size();
    info.resource_templates = offer.resource_templates.size();
    info.prompts = offer.prompts.size();
    for (auto& r : offer.resources)
        r->plugin = plugin.get();
    for (auto& t : offer.resource_templates)
        t->plugin = plugin.get();
    for (auto& p : offer.prompts)
        p->plugin = plugin.get();
    for (auto& page : offer.pages)
        page->plugin = plugin.get();
    entry->plugin = std::move(plugin);
    entry->listing = std::move(listing);
    entry->tools = std::move(tools);
    entry->offer = std::move(offer);
    entry->info = std::move(info);
    return entry;
}

ToolRegistry::ToolRegistry(std::vector<std::shared_ptr<const FamilyEntry>> entries) : entries_(std::move(entries)) {
    for (const auto& e : entries_) {
        plugins_.push_back(e->plugin);
        families_.push_back(e->info);
        for (const auto& t : e->tools)
            ordered_.push_back(t.get());
        for (const auto& r : e->offer.resources)
            resources_.push_back(r.get());
        for (const auto& t : e->offer.resource_templates)
            resource_templates_.push_back(t.get());
        for (const auto& p : e->offer.prompts)
            prompts_.push_back(p.get());
        for (const auto& page : e->offer.pages)
            pages_.push_back(page.get());
    }
    std::sort(ordered_.begin(), ordered_.end(), [](const Tool* a, const Tool* b) { return a->name < b->name; });
    std::string all;
    for (const Tool* t : ordered_) {
        by_name_.emplace(t->name, t);
        all += t->listing.dump();
        all += '\n';
    }
    fingerprint_ = std::to_string(std::hash<std::string>{}(all)&0xffffffffu);
    std::sort(resources_.begin(), resources_.end(),
              [](const Resource* a, const Resource* b) { return a->uri < b->uri; });
    std::sort(prompts_.begin(), prompts_.end(), [](const Prompt* a, const Prompt* b) { return a->name < b->name; });
    resources_fingerprint_ = fingerprint_of(resources_);
    resource_templates_fingerprint_ = fingerprint_of(resource_templates_);
    prompts_fingerprint_ = fingerprint_of(prompts_);
}

} // namespace gatehouse::plugins
