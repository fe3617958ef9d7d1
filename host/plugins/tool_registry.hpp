#pragma once

#include "plugins/loaded_plugin.hpp"
#include "plugins/page.hpp"
#include "plugins/prompt.hpp"
#include "plugins/resource.hpp"
#include "plugins/tool.hpp"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gatehouse::plugins {

struct FamilyInfo {
    std::string family;
    std::string plugin_name;
    std::string version;
    std::string path;
    std::string prefix;
    std::string rules;
    bool reentrant = false;
    std::vector<const Tool*> tools;
    std::size_t resources = 0, resource_templates = 0, prompts = 0;
    bool store_credentials = false; // the operator's grant in its plugins entry
    bool own_process = false;       // isolation: process
    std::string upstream;           // an upstreams entry's family: the command or URL it reaches
    std::string upstream_protocol;  // and the revision it speaks
};

// What a family offers besides tools (ABI 1.2), checked by the loader.
struct FamilyOffer {
    std::vector<std::unique_ptr<Resource>> resources;
    std::vector<std::unique_ptr<ResourceTemplate>> resource_templates;
    std::vector<std::unique_ptr<Prompt>> prompts;
    std::vector<std::unique_ptr<Page>> pages; // ABI 1.3
};

// One family as a registry holds it: what the loader checked, shared by
// every registry it is part of, so a registry made when another family
// joins, leaves or lists anew keeps this one as it is.
struct FamilyEntry {
    // Declared first, so it goes last: the tools point into its memory.
    std::shared_ptr<LoadedPlugin> plugin;
    // What the tools' data points into when the family's descriptor is not
    // its library's own (an upstream server's listing); null otherwise.
    std::shared_ptr<const void> listing;
    std::vector<std::unique_ptr<Tool>> tools;
    FamilyOffer offer;
    FamilyInfo info;

    FamilyEntry() = default;
    FamilyEntry(const FamilyEntry&) = delete;
    FamilyEntry& operator=(const FamilyEntry&) = delete;
    ~FamilyEntry();
};

// Builds a family's entry from what the loader admitted: the plugin, its
// tools and its offer, each pointed at the plugin.
std::shared_ptr<const FamilyEntry> make_family_entry(std::shared_ptr<LoadedPlugin> plugin,
                                                     std::vector<std::unique_ptr<Tool>> tools, std::string prefix,
                                                     FamilyOffer offer, std::shared_ptr<const void> listing = {});

// A frozen set of families with everything they declared: tools, and since
// ABI 1.2 resources, resource templates and prompts. Made once from its
// families, then only read (from many threads, without locks). A host serves
// the one its LiveRegistry holds now; whoever reads one keeps it (a
// shared_ptr) for as long as it uses what it found in it.
class ToolRegistry {
public:
    explicit ToolRegistry(std::vector<std::shared_ptr<const FamilyEntry>> entries = {});
    ToolRegistry(const ToolRegistry&) = delete;
    ToolRegistry& operator=(const ToolRegistry&) = delete;
    ~ToolRegistry();

    const Tool* find(std::string_view name) const;
    // How many times find() ran: a request is decoded once and its tool
    // looked up once (tests hold the host to it).
    std::uint64_t lookups() const { return lookups_.load(std::memory_order_relaxed); }

    // Every tool, in one deterministic order (by published name).
    const std::vector<const Tool*>& ordered() const { return ordered_; }
    const std::vector<FamilyInfo>& families() const { return families_; }
    // The loaded plugins, in load order (the CLI runs their verbs, ABI 1.6).
    const std::vector<std::shared_ptr<LoadedPlugin>>& plugins() const { return plugins_; }
    // The families themselves, in load order.
    const std::vector<std::shared_ptr<const FamilyEntry>>& entries() const { return entries_; }
    const FamilyEntry* entry(std::string_view family) const;

    // Changes whenever the published tool set changes; pagination cursors
    // carry it so a cursor from another tool set is refused.
    const std::string& fingerprint() const { return fingerprint_; }

    bool has_tool(std::string_view name) const { return find(name) != nullptr; }

    // Resources by URI; templates in load order (families as configured, each
    // family's in its own order), which is also the order URIs are matched in;
    // prompts by published name.
    const std::vector<const Resource*>& resources() const { return resources_; }
    const std::vector<const ResourceTemplate*>& resource_templates() const { return resource_templates_; }
    const std::vector<const Prompt*>& prompts() const { return prompts_; }
    const Resource* find_resource(std::string_view uri) const;
    const ResourceTemplate* find_resource_template(std::string_view uri_template) const;
    const Prompt* find_prompt(std::string_view name) const;
    const Page* find_page(std::string_view family, std::string_view name) const;
    bool offers_pages() const { return !pages_.empty(); }

    // Like fingerprint(), one per list, for the cursors of that list.
    const std::string& resources_fingerprint() const { return resources_fingerprint_; }
    const std::string& resource_templates_fingerprint() const { return resource_templates_fingerprint_; }
    const std::string& prompts_fingerprint() const { return prompts_fingerprint_; }

    // What the capabilities advertise: only what some loaded family offers.
    bool offers_resources() const { return !resources_.empty() || !resource_templates_.empty(); }
    bool offers_prompts() const { return !prompts_.empty(); }
    bool offers_completions() const;

private:
    mutable std::atomic<std::uint64_t> lookups_{0};

    std::vector<std::shared_ptr<const FamilyEntry>> entries_;
    std::vector<std::shared_ptr<LoadedPlugin>> plugins_;
    std::vector<const Tool*> ordered_;
    std::unordered_map<std::string_view, const Tool*> by_name_;
    std::vector<FamilyInfo> families_;
    std::string fingerprint_;

    std::vector<const Resource*> resources_;
    std::vector<const ResourceTemplate*> resource_templates_;
    std::vector<const Prompt*> prompts_;
    std::vector<const Page*> pages_;
    std::string resources_fingerprint_, resource_templates_fingerprint_, prompts_fingerprint_;
};

// An upstream family of `registry` whose server has not been reached since
// the host started, so it lists nothing, and whose name hook could have named
// `name`: what a call of that name is told instead of "unknown tool".
struct WaitingUpstream {
    std::string family;
    std::string why;
    std::int64_t retry_after_ms = 0;
};
std::optional<WaitingUpstream> upstream_waiting_for(const ToolRegistry& registry, std::string_view name);

} // namespace gatehouse::plugins
