#pragma once

#include <gatehouse/plugin.h>

#include <cstdint>
#include <functional>
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

    // A tool call begun now and answered later (answers_later): `answered`
    // gets the status and the answer's bytes once, on the thread that hears
    // them (this one, when the call cannot be sent); the host functions the
    // family calls back meanwhile, which may wait, run through `elsewhere`.
    // `call` lives until `answered` has run.
    using Answered = std::function<void(int32_t status, std::string bytes)>;
    using Elsewhere = std::function<void(std::function<void()>)>;
    virtual bool answers_later() const { return false; }
    virtual void begin_tool_call(void* tool_data, gh_call* call, std::string arguments, Answered answered,
                                 Elsewhere elsewhere) {
        (void)tool_data, (void)call, (void)arguments, (void)elsewhere;
        answered(GH_STATUS_INTERNAL, "this family cannot answer a call later");
    }
    // Whether the calling thread is one of the family's own (one that hears
    // its answers): the family must not be destroyed on it.
    virtual bool on_own_thread() const { return false; }
};

} // namespace gatehouse::plugins
