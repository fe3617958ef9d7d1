#pragma once

#include <gatehouse/plugin.h>

#include <boost/dll/shared_library.hpp>

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

namespace gatehouse::plugins {

// A shared library whose descriptor has been read and whose init succeeded.
// Owns the library handle: shutdown runs and the library unloads on
// destruction, after the last call returned.
class LoadedPlugin {
public:
    LoadedPlugin(boost::dll::shared_library library, std::filesystem::path path, gh_plugin_desc desc);
    ~LoadedPlugin();
    LoadedPlugin(const LoadedPlugin&) = delete;
    LoadedPlugin& operator=(const LoadedPlugin&) = delete;

    // Runs init with {"data_dir", "settings"}; returns the plugin's sentence on failure.
    bool init(const std::string& config_json, std::string& error);

    // Calls one tool. Serialized with a per-plugin mutex unless the plugin is
    // reentrant. The host holds no other lock while inside the plugin.
    int32_t call(gh_tool_fn fn, void* tool_data, gh_call* call, std::string_view arguments, gh_sink* out);

    // ABI 1.2: runs fn(plugin_state) — a resource read, a prompt get, a
    // completion — under the same contract as a tool call: serialized unless
    // the plugin is reentrant.
    template <class Fn> int32_t run(Fn&& fn) {
        if (reentrant()) return fn(state_);
        std::lock_guard lock(serial_);
        return fn(state_);
    }

    // ABI 1.1: the family's critical notes for an owner {"store","user","principal"}.
    bool has_critical_items() const { return desc_.critical_items != nullptr; }
    bool critical_items(std::string_view owner_json, std::string& out);

    const std::filesystem::path& path() const { return path_; }
    const std::string& name() const { return name_; }
    const std::string& version() const { return version_; }
    const std::string& family() const { return family_; }
    const std::string& rules() const { return rules_; }
    bool reentrant() const { return (desc_.flags & GH_PLUGIN_REENTRANT) != 0; }

private:
    boost::dll::shared_library library_;
    std::filesystem::path path_;
    gh_plugin_desc desc_;
    std::string name_, version_, family_, rules_;
    void* state_ = nullptr;
    bool initialized_ = false;
    std::mutex serial_;
};

} // namespace gatehouse::plugins
