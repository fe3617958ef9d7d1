#include "plugins/loaded_plugin.hpp"

#include "isolation/family_process.hpp"
#include "upstream/upstream_family.hpp"
#include "plugins/abi_text.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/host_api.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace gatehouse::plugins {

LoadedPlugin::LoadedPlugin(boost::dll::shared_library library, std::filesystem::path path, gh_plugin_desc desc)
    : library_(std::move(library)), path_(std::move(path)), desc_(desc), name_(abi_copy(desc.name)),
      version_(abi_copy(desc.version)), family_(abi_copy(desc.family)), rules_(abi_copy(desc.rules)) {}

LoadedPlugin::LoadedPlugin(std::unique_ptr<RemoteFamily> remote, std::filesystem::path path, gh_plugin_desc desc)
    : remote_(std::move(remote)), path_(std::move(path)), desc_(desc), name_(abi_copy(desc.name)),
      version_(abi_copy(desc.version)), family_(abi_copy(desc.family)), rules_(abi_copy(desc.rules)) {}

// A remote family runs its own shutdown, as remote_ goes.
LoadedPlugin::~LoadedPlugin() {
    if (initialized_ && desc_.shutdown) desc_.shutdown(state_);
    // The last answer a family gave later can let the last reference to it
    // go on the very thread that heard that answer, which its destructor
    // joins: it ends on a thread of its own instead.
    if (remote_ && remote_->on_own_thread()) std::thread([remote = std::move(remote_)] {}).detach();
}

bool LoadedPlugin::init(const std::string& config_json, std::string& error) {
    if (remote_) {
        state_ = remote_->plugin_state();
        initialized_ = remote_->init(config_json, error);
        return initialized_;
    }
    if (!desc_.init) {
        initialized_ = true;
        return true;
    }
    gh_sink sink;
    const int32_t status = desc_.init(host_api(), gh_str{config_json.data(), config_json.size()}, &state_, &sink);
    if (status != GH_STATUS_OK) {
        error = sink.bytes.empty() ? "init returned status " + std::to_string(status) : sink.bytes;
        return false;
    }
    initialized_ = true;
    return true;
}

int32_t LoadedPlugin::call(gh_tool_fn fn, void* tool_data, gh_call* call, std::string_view arguments, gh_sink* out) {
    const gh_str args{arguments.data(), arguments.size()};
    if (reentrant()) return fn(state_, tool_data, call, args, out);
    // Polled, because cancellation is a flag, not a signal this mutex could wait on.
    std::unique_lock lock(serial_, std::defer_lock);
    while (!lock.try_lock_for(std::chrono::milliseconds(20)))
        if (call && call->environment && call->environment->cancelled()) return GH_STATUS_CANCELLED;
    const SerialHolder holder(serial_holder_);
    return fn(state_, tool_data, call, args, out);
}

int LoadedPlugin::run_command(const Command& command, const std::string& context, const std::vector<std::string>& args,
                              std::string& out, std::string& err) {
    std::vector<gh_str> words;
    words.reserve(args.size());
    for (const auto& a : args)
        words.push_back(gh_str{a.data(), a.size()});
    gh_sink out_sink, err_sink;
    const int status = run([&](void* state) {
        return command.run(state, command.data, gh_str{context.data(), context.size()}, words.data(),
                           static_cast<uint32_t>(words.size()), &out_sink, &err_sink);
    });
    out = std::move(out_sink.bytes);
    err = std::move(err_sink.bytes);
    return status;
}

bool LoadedPlugin::try_enter() {
    unsigned inside = calls_inside_.load();
    do {
        if (inside >= call_limits_.max_in_flight) return false;
    } while (!calls_inside_.compare_exchange_weak(inside, inside + 1));
    return true;
}

void LoadedPlugin::leave() {
    --calls_inside_;
}

std::function<void()> LoadedPlugin::admit(Job job, Submit later, bool sends_only) {
    {
        std::lock_guard lock(admission_mutex_);
        if (admitted_ >= call_limits_.max_in_flight) {
            parked_.push_back({std::move(job), sends_only});
            later_ = std::move(later);
            return {};
        }
        ++admitted_;
    }
    return admitted(std::move(job));
}

// The job, then its place handed to the next parked job (or given back).
std::function<void()> LoadedPlugin::admitted(Job job) {
    return [this, job = std::move(job)] {
        // The place is handed on however the job ends: one that throws
        // (a fault, logged by the pool) must not keep it for good, or the
        // family's calls would park for ever once max_in_flight of them had.
        // One whose answer comes later hands it on then.
        struct HandOn {
            LoadedPlugin& plugin;
            bool later = false;
            ~HandOn() {
                if (!later) plugin.hand_on_place();
            }
        } hand_on{*this};
        hand_on.later = !job();
    };
}

void LoadedPlugin::hand_on_place(bool here) {
    Parked next;
    Submit later;
    {
        std::lock_guard lock(admission_mutex_);
        if (parked_.empty()) {
            --admitted_;
            return;
        }
        next = std::move(parked_.front());
        parked_.pop_front();
        later = later_;
    }
    if (here && next.sends_only) return admitted(std::move(next.job))();
    later(admitted(std::move(next.job)));
}

const isolation::FamilyProcess* LoadedPlugin::process() const {
    return dynamic_cast<const isolation::FamilyProcess*>(remote_.get());
}

const upstream::UpstreamFamily* LoadedPlugin::upstream() const {
    return dynamic_cast<const upstream::UpstreamFamily*>(remote_.get());
}

upstream::UpstreamFamily* LoadedPlugin::upstream() {
    return dynamic_cast<upstream::UpstreamFamily*>(remote_.get());
}

void LoadedPlugin::drop_round(std::string_view state, const std::string& owner, const std::string& reason) {
    if (auto* family = upstream()) family->drop_round(state, owner, reason);
}

bool LoadedPlugin::critical_items(std::string_view owner_json, std::string& out) {
    if (!desc_.critical_items) return false;
    gh_sink sink;
    const gh_str owner{owner_json.data(), owner_json.size()};
    int32_t status;
    if (reentrant()) {
        status = desc_.critical_items(state_, owner, &sink);
    } else {
        // Asked while a session opens: a long call of this family must not
        // hold the opening (and its worker) for its whole length.
        if (serial_holder_.load() == std::this_thread::get_id()) {
            out = "asked from inside one of its own calls, which a family that is not reentrant cannot answer";
            return false;
        }
        std::unique_lock lock(serial_, std::defer_lock);
        if (!lock.try_lock_for(kCriticalItemsWait)) {
            out = "busy with another call for longer than " + std::to_string(kCriticalItemsWait.count()) + " ms";
            return false;
        }
        const SerialHolder holder(serial_holder_);
        status = desc_.critical_items(state_, owner, &sink);
    }
    out = std::move(sink.bytes);
    return status == GH_STATUS_OK;
}

} // namespace gatehouse::plugins
