#pragma once

#include <string>

namespace gatehouse::plugins {

// A family whose code does not run in the host's process: a shared library
// served from a process of its own (isolation::FamilyProcess), or an MCP
// server the host is a client of (upstream::UpstreamFamily). Its descriptor's
// functions reach it through the plugin state it names.
class RemoteFamily {
public:
    virtual ~RemoteFamily() = default;
    // What LoadedPlugin passes the descriptor's functions as their plugin state.
    virtual void* plugin_state() = 0;
    // The family's init with {"data_dir", "settings"}; false and a sentence on failure.
    virtual bool init(const std::string& config_json, std::string& error) = 0;
};

} // namespace gatehouse::plugins
