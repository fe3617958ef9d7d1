#pragma once

#include "plugins/loaded_plugin.hpp"
#include "plugins/tool.hpp"

#include <memory>
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
};

// The frozen set of families and tools the host serves. Built once by the
// plugin loader, then only read (from many threads, without locks).
class ToolRegistry {
public:
    ToolRegistry() = default;
    ToolRegistry(const ToolRegistry&) = delete;
    ToolRegistry& operator=(const ToolRegistry&) = delete;
    ~ToolRegistry();

    const Tool* find(std::string_view name) const;

    // Every tool, in one deterministic order (by published name).
    const std::vector<const Tool*>& ordered() const { return ordered_; }
    const std::vector<FamilyInfo>& families() const { return families_; }

    // Changes whenever the published tool set changes; pagination cursors
    // carry it so a cursor from another tool set is refused.
    const std::string& fingerprint() const { return fingerprint_; }

    bool has_tool(std::string_view name) const { return find(name) != nullptr; }

private:
    friend class PluginLoader;
    void add_family(std::unique_ptr<LoadedPlugin> plugin, std::vector<std::unique_ptr<Tool>> tools, std::string prefix);
    void freeze();

    std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
    std::vector<std::unique_ptr<Tool>> tools_;
    std::vector<const Tool*> ordered_;
    std::unordered_map<std::string_view, const Tool*> by_name_;
    std::vector<FamilyInfo> families_;
    std::string fingerprint_;
};

} // namespace gatehouse::plugins
