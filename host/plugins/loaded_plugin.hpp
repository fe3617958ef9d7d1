#pragma once

#include "plugins/command.hpp"
#include "plugins/remote_family.hpp"

#include <gatehouse/plugin.h>

#include <boost/dll/shared_library.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gatehouse::isolation {
class FamilyProcess;
}
namespace gatehouse::upstream {
class UpstreamFamily;
}

namespace gatehouse::plugins {

// The host's bounds on one plugin's calls: limits.max_in_flight_per_plugin and
// limits.tool_timeout_ms, or the plugin's own entry under plugins:.
struct PluginCallLimits {
    unsigned max_in_flight = 4;
    std::uint64_t tool_timeout_ms = 120000;
    bool max_in_flight_overridden = false; // set in its plugins entry (for messages)
    bool tool_timeout_overridden = false;
};

// A shared library whose descriptor has been read and whose init succeeded.
// Owns the library handle: shutdown runs and the library unloads on
// destruction, after the last call returned.
class LoadedPlugin {
public:
    LoadedPlugin(boost::dll::shared_library library, std::filesystem::path path, gh_plugin_desc desc);
    // A family whose code runs elsewhere (in its own process, isolation:
    // process; or an upstream MCP server): desc is its descriptor, whose
    // functions reach it, and its init and shutdown are its own.
    LoadedPlugin(std::unique_ptr<RemoteFamily> remote, std::filesystem::path path, gh_plugin_desc desc);
    ~LoadedPlugin();
    LoadedPlugin(const LoadedPlugin&) = delete;
    LoadedPlugin& operator=(const LoadedPlugin&) = delete;

    // Runs init with {"data_dir", "settings"}; returns the plugin's sentence on failure.
    bool init(const std::string& config_json, std::string& error);

    // Calls one tool. Serialized with a per-plugin mutex unless the plugin is
    // reentrant; a call cancelled while it waits for that mutex gives up
    // (GH_STATUS_CANCELLED) instead of holding its worker until a stuck call
    // returns. The host holds no other lock while inside the plugin.
    int32_t call(gh_tool_fn fn, void* tool_data, gh_call* call, std::string_view arguments, gh_sink* out);

    // Whether a tool call can be begun and answered later
    // (RemoteFamily::begin_tool_call): a reentrant family in a process of
    // its own, whose calls need no thread to wait for them.
    bool answers_later() const { return remote_ && reentrant() && remote_->answers_later(); }
    void begin_call(void* tool_data, gh_call* call, std::string arguments, RemoteFamily::Answered answered,
                    RemoteFamily::Elsewhere elsewhere) {
        remote_->begin_tool_call(tool_data, call, std::move(arguments), std::move(answered), std::move(elsewhere));
    }

    // ABI 1.2: runs fn(plugin_state) — a resource read, a prompt get, a
    // completion — under the same contract as a tool call: serialized unless
    // the plugin is reentrant.
    template <class Fn> int32_t run(Fn&& fn) {
        if (reentrant()) return fn(state_);
        std::lock_guard lock(serial_);
        const SerialHolder holder(serial_holder_);
        return fn(state_);
    }
    // run(), waiting for the family's lock at most `wait`: nothing when the
    // lock was not free by then. For what no cancellation ends and that
    // should not wait out a stuck call (a page a person opened).
    template <class Fn> std::optional<int32_t> run_within(std::chrono::milliseconds wait, Fn&& fn) {
        if (reentrant()) return fn(state_);
        std::unique_lock lock(serial_, std::defer_lock);
        if (!lock.try_lock_for(wait)) return std::nullopt;
        const SerialHolder holder(serial_holder_);
        return fn(state_);
    }

    // A place among the calls inside this plugin or waiting for it, at most
    // call_limits().max_in_flight. A call that never returns keeps its place,
    // so a stuck plugin holds at most that many workers.
    bool try_enter();
    void leave();
    unsigned calls_inside() const { return calls_inside_.load(); }

    // A place among call_limits().max_in_flight admitted jobs of this
    // plugin: when one is free, returns `job` (wrapped to hand its place on
    // when done) for the caller to run where it decides. Else parks it,
    // holding no worker, and returns nothing; when its turn comes it goes
    // to `later` (the worker pool). So a burst of calls waits its turn
    // instead of being refused, and a plugin whose calls never return still
    // holds at most that many workers. A job returns whether it is done; one
    // whose answer comes later (DeferredAnswer) keeps its place until it
    // calls hand_on_place.
    // `sends_only`: the job passes the gate and sends its call to a family
    // that answers later, and never waits for that family.
    using Submit = std::function<void(std::function<void()>)>;
    using Job = std::function<bool()>;
    std::function<void()> admit(Job job, Submit later, bool sends_only = false);
    // An admitted job's place goes to the next parked job, or back. The one
    // ending a call answered later runs it on its own thread when that job
    // only sends (`here`): the thread that hears a family's answers sends
    // it its next call, and wakes no worker for it.
    void hand_on_place(bool here = false);

    void set_call_limits(const PluginCallLimits& limits) { call_limits_ = limits; }
    const PluginCallLimits& call_limits() const { return call_limits_; }

    // The operator's store_credentials grant (its plugins entry): the plugin
    // may ask for the store password, and its answers are checked for it.
    void set_store_credentials(bool allowed) { store_credentials_ = allowed; }
    bool store_credentials() const { return store_credentials_; }

    // ABI 1.1: the family's critical notes for an owner {"store","user","principal"}.
    bool has_critical_items() const { return desc_.critical_items != nullptr; }
    // The family's critical notes for `owner_json`, as JSON text in `out`;
    // false with the reason in `out` when it could not say (its own failure,
    // or, not reentrant, busy in another call for kCriticalItemsWait).
    bool critical_items(std::string_view owner_json, std::string& out);
    static constexpr std::chrono::milliseconds kCriticalItemsWait{2000};

    // ABI 1.6: the family's command-line verbs, checked by the loader.
    void set_commands(std::vector<Command> commands) { commands_ = std::move(commands); }
    const std::vector<Command>& commands() const { return commands_; }
    // Runs one of commands() with the words after the verb; `context` is the
    // JSON object the verb gets. Returns the verb's exit status.
    int run_command(const Command& command, const std::string& context, const std::vector<std::string>& args,
                    std::string& out, std::string& err);

    const std::filesystem::path& path() const { return path_; }
    const std::string& name() const { return name_; }
    const std::string& version() const { return version_; }
    const std::string& family() const { return family_; }
    const std::string& rules() const { return rules_; }
    bool reentrant() const { return (desc_.flags & GH_PLUGIN_REENTRANT) != 0; }
    // Its code runs in another process (isolation: process, or an upstream
    // server): a call waits, idle, for that process's answer, unless that
    // answer comes later (answers_later).
    bool remote() const { return remote_ != nullptr; }
    // Its own process, for a family with isolation: process; else null.
    const isolation::FamilyProcess* process() const;
    // The MCP server it is a client of, for a family of upstreams:; else null.
    const upstream::UpstreamFamily* upstream() const;
    upstream::UpstreamFamily* upstream();
    // A round's state the host will not bring back to the family (a
    // 2025-11-25 client did not answer what the round asked): what the
    // family holds open for it ends now. Only an upstream family holds
    // anything (the server's call); a plugin's state is its bytes alone.
    void drop_round(std::string_view state, const std::string& owner, const std::string& reason);
    // The configuration section its entry is in, for sentences that name
    // one of its keys: "upstreams" or "plugins".
    const char* entry_section() const { return upstream() ? "upstreams" : "plugins"; }

private:
    boost::dll::shared_library library_;
    std::unique_ptr<RemoteFamily> remote_;
    std::filesystem::path path_;
    gh_plugin_desc desc_;
    std::string name_, version_, family_, rules_;
    void* state_ = nullptr;
    bool initialized_ = false;
    std::timed_mutex serial_;
    // The thread inside the plugin under serial_, so a call back into the
    // host from it (session_open asking critical_items) is told, not left to
    // lock serial_ a second time.
    std::atomic<std::thread::id> serial_holder_{};
    struct SerialHolder {
        std::atomic<std::thread::id>& holder;
        explicit SerialHolder(std::atomic<std::thread::id>& h) : holder(h) { holder = std::this_thread::get_id(); }
        ~SerialHolder() { holder = std::thread::id(); }
    };
    PluginCallLimits call_limits_;
    bool store_credentials_ = false;
    std::vector<Command> commands_;
    std::atomic<unsigned> calls_inside_{0};
    std::function<void()> admitted(Job job);
    std::mutex admission_mutex_;
    unsigned admitted_ = 0;
    struct Parked {
        Job job;
        bool sends_only = false;
    };
    std::deque<Parked> parked_;
    Submit later_; // where parked jobs go when their turn comes
};

} // namespace gatehouse::plugins
