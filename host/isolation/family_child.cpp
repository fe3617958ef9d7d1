#include "isolation/family_child.hpp"

#include "isolation/address_sanitizer.hpp"
#include "isolation/frame_channel.hpp"
#include "isolation/wire_descriptor.hpp"
#include "plugins/abi_text.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/host_api.hpp"
#include "plugins/plugin_loader.hpp"
#include "transport/inline_call_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <list>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace gatehouse::isolation {

namespace {

using plugins::abi_copy;
using plugins::abi_str;

class ServedFamily;

// One call the host asked for, as the plugin's gh_call: the handle the
// plugin holds is this object, cast.
struct ChildCall {
    std::uint64_t id = 0;
    ServedFamily* family = nullptr;
    std::atomic<bool> cancelled{false};
    std::string input_responses = "{}";
    std::string request_state;
    std::optional<std::string> context; // call_context, asked of the host once
    // Set while the thread that read the call runs it holding the reading
    // (InlineCallWatch's token); 0 when another thread reads meanwhile.
    std::uint64_t watched = 0;
    std::list<gh_sink> sinks; // sink_new: a list keeps each where it is, and allocates nothing while empty
    std::mutex asking;        // one host function at a time per call
    std::mutex mutex;
    std::condition_variable answered;
    std::optional<Frame> reply;
};

ChildCall* child_call(gh_call* call) {
    return reinterpret_cast<ChildCall*>(call);
}

gh_host_api child_api();

// The library, its tables and the socket to the host.
class ServedFamily {
public:
    ServedFamily(int input, int output) : channel_(input, output) { channel_.block_on_reads(); }
    FrameChannel& channel() { return channel_; }
    // Loads the library, offers its descriptor, and serves until the host
    // goes or asks it to stop; never returns.
    [[noreturn]] void serve(const char* library_path);

    // A host function the plugin called: asked of the host, answered into out.
    int32_t ask_host(gh_call* handle, HostFunction function, std::vector<std::string> fields, gh_sink* out);

private:
    const gh_host_api api_ = child_api(); // what the plugin holds for the life of the process
    FrameChannel channel_;
    plugins::OpenedLibrary library_;
    PluginTables tables_;
    void* state_ = nullptr;
    bool initialized_ = false;
    std::mutex calls_mutex_;
    std::unordered_map<std::uint64_t, std::shared_ptr<ChildCall>> calls_;

    // The threads take turns (leader and followers): one reads the host's
    // frames, and runs each call it reads itself, still holding the reading,
    // so a call costs no thread hand-off and no wake-up in this process. A
    // call that outlasts a tick (kInlineTick), or waits on the host, gives
    // the reading to a waiting thread (or a new one) and runs on; frames the
    // host sent meanwhile (cancellations, other calls, the answers of host
    // functions) wait that tick at most. Threads are made as calls overlap
    // and kept.
    static constexpr std::chrono::microseconds kInlineTick{1000};
    std::mutex turns_mutex_;
    std::condition_variable reading_free_;
    bool someone_reads_ = false;
    unsigned waiting_to_read_ = 0;
    transport::InlineCallWatch watch_{kInlineTick, [this] { hand_reading_on(); }};

    [[noreturn]] void take_turns();
    // Reads frames until one is a call (its frame), handling the others.
    Frame read_until_call();
    void hand_reading_on();
    // A call run by the thread holding the reading is about to wait on the
    // host: the reading goes on at once (the answer comes through it), unless
    // the watch handed it on already.
    void stop_holding_reading(ChildCall& call);
    void init(const Frame& frame);
    std::shared_ptr<ChildCall> open_call(Frame& frame);
    Frame answer(Frame frame, const std::shared_ptr<ChildCall>& call);
    int32_t run(const Frame& frame, ChildCall& call, gh_sink& out, gh_sink& err);
    std::shared_ptr<ChildCall> find(std::uint64_t id);
};

// The family this process serves, for what the plugin reports outside any
// call (log and notify_changed with call NULL), where the ABI gives no handle.
ServedFamily* g_served_family = nullptr;

void send_outside_or_in(gh_call* call, FrameType type, std::int32_t code, std::vector<std::string> fields) {
    ServedFamily* family = call ? child_call(call)->family : g_served_family;
    if (!family) return;
    family->channel().send(Frame{type, code, 0, call ? child_call(call)->id : 0, std::move(fields)});
}

void api_log(gh_call* call, int32_t level, gh_str message) noexcept {
    try {
        send_outside_or_in(call, FrameType::log, level, {abi_copy(message)});
    } catch (...) {
    }
}

void api_progress(gh_call* call, double done, double total, gh_str message) noexcept {
    if (!call) return;
    try {
        send_outside_or_in(call, FrameType::progress, 0, {number_field(done), number_field(total), abi_copy(message)});
    } catch (...) {
    }
}

int32_t api_is_cancelled(gh_call* call) noexcept {
    return call && child_call(call)->cancelled.load() ? 1 : 0;
}

gh_str api_call_context(gh_call* call) noexcept {
    static constexpr std::string_view kEmpty = "{}";
    try {
        if (call) {
            auto* c = child_call(call);
            if (!c->context) {
                gh_sink answer;
                if (c->family->ask_host(call, HostFunction::call_context, {}, &answer) == GH_STATUS_OK)
                    c->context = std::move(answer.bytes);
                else
                    c->context = std::string(kEmpty);
            }
            return abi_str(*c->context);
        }
    } catch (...) {
    }
    return abi_str(kEmpty);
}

gh_sink* api_sink_new(gh_call* call) noexcept {
    try {
        return call ? &child_call(call)->sinks.emplace_back() : nullptr;
    } catch (...) {
        return nullptr;
    }
}

int32_t ask(gh_call* call, HostFunction function, std::vector<std::string> fields, gh_sink* out) noexcept {
    try {
        if (!call) return GH_STATUS_INTERNAL;
        return child_call(call)->family->ask_host(call, function, std::move(fields), out);
    } catch (...) {
        return GH_STATUS_INTERNAL;
    }
}

int32_t api_session_describe(gh_call* call, gh_str handle, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::session_describe, {abi_copy(handle)}, out) : GH_STATUS_INTERNAL;
}
int32_t api_session_open(gh_call* call, gh_str topic, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::session_open, {abi_copy(topic)}, out) : GH_STATUS_INTERNAL;
}
int32_t api_rules_accept(gh_call* call, gh_str handle, gh_str code, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::rules_accept, {abi_copy(handle), abi_copy(code)}, out) : GH_STATUS_INTERNAL;
}
int32_t api_critical_read(gh_call* call, gh_str item_ids, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::critical_read, {abi_copy(item_ids)}, out) : GH_STATUS_INTERNAL;
}

void api_notify_changed(gh_call* call, int32_t kind, gh_str uri) noexcept {
    try {
        send_outside_or_in(call, FrameType::notify, kind, {abi_copy(uri)});
    } catch (...) {
    }
}

gh_str api_input_responses(gh_call* call) noexcept {
    static constexpr std::string_view kNone = "{}";
    return call ? abi_str(child_call(call)->input_responses) : abi_str(kNone);
}

gh_str api_request_state(gh_call* call) noexcept {
    return call ? abi_str(child_call(call)->request_state) : gh_str{nullptr, 0};
}

int32_t api_state_get(gh_call* call, gh_str key, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::state_get, {abi_copy(key)}, out) : GH_STATUS_INVALID_ARGS;
}
int32_t api_state_put(gh_call* call, gh_str key, gh_str value, uint64_t ttl_ms) noexcept {
    gh_sink ignored;
    return ask(call, HostFunction::state_put, {abi_copy(key), abi_copy(value), number_field(ttl_ms)}, &ignored);
}
int32_t api_state_erase(gh_call* call, gh_str key) noexcept {
    gh_sink ignored;
    return ask(call, HostFunction::state_erase, {abi_copy(key)}, &ignored);
}
int32_t api_state_take(gh_call* call, gh_str key, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::state_take, {abi_copy(key)}, out) : GH_STATUS_INVALID_ARGS;
}
int32_t api_store_credentials(gh_call* call, gh_sink* out) noexcept {
    return out ? ask(call, HostFunction::store_credentials, {}, out) : GH_STATUS_INTERNAL;
}

// The host's table, with every function that reaches the call or the host
// replaced by one that asks across the socket; the sinks (sink_write,
// sink_bytes) work on this process's memory as the host's do on its own.
gh_host_api child_api() {
    gh_host_api api = *plugins::host_api();
    api.log = &api_log;
    api.progress = &api_progress;
    api.is_cancelled = &api_is_cancelled;
    api.call_context = &api_call_context;
    api.sink_new = &api_sink_new;
    api.session_describe = &api_session_describe;
    api.session_open = &api_session_open;
    api.rules_accept = &api_rules_accept;
    api.critical_read = &api_critical_read;
    api.notify_changed = &api_notify_changed;
    api.input_responses = &api_input_responses;
    api.request_state = &api_request_state;
    api.state_get = &api_state_get;
    api.state_put = &api_state_put;
    api.state_erase = &api_state_erase;
    api.state_take = &api_state_take;
    api.store_credentials = &api_store_credentials;
    return api;
}

void ServedFamily::stop_holding_reading(ChildCall& call) {
    // The same exchange the watch and the call's end make: one of them wins,
    // and only the winner hands the reading on.
    if (call.watched != 0 && watch_.end(call.watched)) hand_reading_on();
}

int32_t ServedFamily::ask_host(gh_call* handle, HostFunction function, std::vector<std::string> fields, gh_sink* out) {
    auto* call = child_call(handle);
    std::lock_guard one_at_a_time(call->asking);
    stop_holding_reading(*call);
    {
        std::lock_guard lock(call->mutex);
        call->reply.reset();
    }
    if (!channel_.send(
            Frame{FrameType::host_call, static_cast<std::int32_t>(function), 0, call->id, std::move(fields)}))
        return GH_STATUS_INTERNAL;
    std::unique_lock lock(call->mutex);
    call->answered.wait(lock, [&] { return call->reply.has_value(); });
    if (out) out->bytes.append(call->reply->field(0));
    return call->reply->code;
}

std::shared_ptr<ChildCall> ServedFamily::find(std::uint64_t id) {
    std::lock_guard lock(calls_mutex_);
    auto found = calls_.find(id);
    return found == calls_.end() ? nullptr : found->second;
}

void ServedFamily::init(const Frame& frame) {
    gh_sink error;
    int32_t status = GH_STATUS_OK;
    if (tables_.desc.init) {
        const auto& config = frame.field(0);
        status = tables_.desc.init(&api_, abi_str(config), &state_, &error);
    }
    initialized_ = status == GH_STATUS_OK;
    channel_.send(Frame{FrameType::result, status, 0, frame.id, {std::move(error.bytes)}});
}

std::shared_ptr<ChildCall> ServedFamily::open_call(Frame& frame) {
    auto call = std::make_shared<ChildCall>();
    call->id = frame.id;
    call->family = this;
    if (carries_round(static_cast<CallKind>(frame.code)) && frame.fields.size() >= 2) {
        call->request_state = std::move(frame.fields.back());
        frame.fields.pop_back();
        call->input_responses = std::move(frame.fields.back());
        frame.fields.pop_back();
    }
    std::lock_guard lock(calls_mutex_);
    calls_.emplace(call->id, call);
    return call;
}

Frame ServedFamily::answer(Frame frame, const std::shared_ptr<ChildCall>& call) {
    gh_sink out, err;
    const int32_t status = run(frame, *call, out, err);
    {
        std::lock_guard lock(calls_mutex_);
        calls_.erase(call->id);
    }
    return Frame{FrameType::result, status, 0, call->id, {std::move(out.bytes), std::move(err.bytes)}};
}

int32_t ServedFamily::run(const Frame& frame, ChildCall& call, gh_sink& out, gh_sink& err) {
    auto* handle = reinterpret_cast<gh_call*>(&call);
    const std::uint32_t i = frame.index;
    auto s = [&](std::size_t n) { return abi_str(frame.field(n)); };
    const auto& t = tables_;
    auto missing = [&](const char* what) {
        out.bytes = std::string("the family's process has no ") + what + " #" + std::to_string(i);
        return GH_STATUS_INTERNAL;
    };
    switch (static_cast<CallKind>(frame.code)) {
    case CallKind::tool:
        if (i >= t.tools.size() || !t.tools[i].call) return missing("tool");
        return t.tools[i].call(state_, t.tools[i].tool_data, handle, s(0), &out);
    case CallKind::resource_read:
        if (i >= t.resources.size() || !t.resources[i].read) return missing("resource");
        return t.resources[i].read(state_, t.resources[i].resource_data, handle, s(0), s(1), &out);
    case CallKind::template_read:
        if (i >= t.templates.size() || !t.templates[i].read) return missing("resource template");
        return t.templates[i].read(state_, t.templates[i].template_data, handle, s(0), s(1), &out);
    case CallKind::template_complete:
        if (i >= t.templates.size() || !t.templates[i].complete) return missing("template completion");
        return t.templates[i].complete(state_, t.templates[i].template_data, handle, s(0), s(1), s(2), &out);
    case CallKind::prompt_get:
        if (i >= t.prompts.size() || !t.prompts[i].get) return missing("prompt");
        return t.prompts[i].get(state_, t.prompts[i].prompt_data, handle, s(0), &out);
    case CallKind::prompt_complete:
        if (i >= t.prompts.size() || !t.prompts[i].complete) return missing("prompt completion");
        return t.prompts[i].complete(state_, t.prompts[i].prompt_data, handle, s(0), s(1), s(2), &out);
    case CallKind::page_show:
        if (i >= t.pages.size() || !t.pages[i].show) return missing("page");
        return t.pages[i].show(state_, t.pages[i].page_data, handle, s(0), s(1), &out);
    case CallKind::page_act:
        if (i >= t.pages.size() || !t.pages[i].act) return missing("page");
        return t.pages[i].act(state_, t.pages[i].page_data, handle, s(0), s(1), &out);
    case CallKind::critical_items:
        if (!t.desc.critical_items) return missing("critical items function");
        return t.desc.critical_items(state_, s(0), &out);
    case CallKind::command: {
        if (i >= t.commands.size() || !t.commands[i].run) return missing("command");
        std::vector<gh_str> words;
        for (std::size_t n = 1; n < frame.fields.size(); ++n)
            words.push_back(abi_str(frame.fields[n]));
        return t.commands[i].run(state_, t.commands[i].command_data, s(0), words.data(),
                                 static_cast<uint32_t>(words.size()), &out, &err);
    }
    }
    out.bytes = "the family's process does not know call kind " + std::to_string(frame.code);
    return GH_STATUS_INTERNAL;
}

namespace {

// The name `ps`, `top` and the kernel's own log (an OOM kill, a segfault)
// give this process: "gh:" and the family's name, where the spawn of
// /proc/self/exe would leave "exe" for every family alike. Printable ASCII
// only, and the kernel keeps 15 bytes.
void name_this_process(std::string_view family) {
    std::string name = "gh:";
    for (char c : family)
        if (c > ' ' && c < 0x7f && name.size() < 15) name += c;
    ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
}

} // namespace

void ServedFamily::serve(const char* library_path) {
    std::string encoded;
    try {
        library_ = plugins::open_library(library_path, &api_);
        tables_ = read_plugin_tables(library_.descriptor);
        name_this_process(plugins::abi_view(tables_.desc.family));
        encoded = encode_descriptor(tables_);
    } catch (const std::exception& e) {
        channel_.send(Frame{FrameType::descriptor, 1, 0, 0, {e.what()}});
        std::fflush(nullptr);
        std::_Exit(1);
    }
    channel_.send(Frame{FrameType::descriptor, 0, 0, 0, {std::move(encoded)}});
    take_turns();
}

void ServedFamily::take_turns() {
    for (;;) {
        {
            std::unique_lock lock(turns_mutex_);
            ++waiting_to_read_;
            reading_free_.wait(lock, [&] { return !someone_reads_; });
            --waiting_to_read_;
            someone_reads_ = true;
        }
        for (;;) {
            Frame frame = read_until_call();
            // Known before the next reader starts: a cancellation it reads finds the call.
            auto call = open_call(frame);
            if (!watch_.ready()) {
                // No watch (no thread to spare for it): the reading goes on
                // before the call runs, as nothing would hand it on later.
                hand_reading_on();
                channel_.send(answer(std::move(frame), call));
                break;
            }
            const std::uint64_t token = watch_.begin();
            call->watched = token;
            channel_.send(answer(std::move(frame), call));
            if (!watch_.end(token)) break; // handed on meanwhile: another thread reads
        }
    }
}

void ServedFamily::hand_reading_on() {
    std::lock_guard lock(turns_mutex_);
    someone_reads_ = false;
    if (waiting_to_read_ > 0)
        reading_free_.notify_one();
    else
        std::thread([this] { take_turns(); }).detach();
}

Frame ServedFamily::read_until_call() {
    try {
        while (auto frame = channel_.receive()) {
            switch (frame->type) {
            case FrameType::call: return std::move(*frame);
            case FrameType::init: init(*frame); break;
            case FrameType::cancel:
                if (auto call = find(frame->id)) call->cancelled = true;
                break;
            case FrameType::host_reply:
                if (auto call = find(frame->id)) {
                    {
                        std::lock_guard lock(call->mutex);
                        call->reply = std::move(*frame);
                    }
                    call->answered.notify_all();
                }
                break;
            case FrameType::shutdown:
                if (initialized_ && tables_.desc.shutdown) tables_.desc.shutdown(state_);
                std::cout.flush();
                std::fflush(nullptr);
                std::_Exit(0);
            default: break;
            }
        }
    } catch (const BrokenChannel& e) {
        std::cerr << "gatehouse serve-family: the host sent a broken frame: " << e.what() << "\n";
        std::_Exit(1);
    }
    // The host is gone: nothing is left to serve, whatever the plugin's threads are doing.
    std::_Exit(0);
}

// Closes every descriptor but 0, 1, 2 and those in `kept`: by close_range,
// or where the kernel or a seccomp profile refuses it, each that
// /proc/self/fd lists. False (errno set) when neither could be done: the
// plugin must then not run, for it could hold the host's stdout or its
// listening socket.
bool keep_only_standard_streams_and(std::vector<int> kept) {
    std::sort(kept.begin(), kept.end());
    bool closed = true;
    unsigned next = static_cast<unsigned>(STDERR_FILENO) + 1; // the first not yet seen to
    for (int keep : kept) {
        if (keep <= STDERR_FILENO) continue;
        const auto number = static_cast<unsigned>(keep);
        if (number > next) closed = closed && ::close_range(next, number - 1, 0) == 0;
        next = std::max(next, number + 1);
    }
    closed = closed && ::close_range(next, ~0U, 0) == 0;
    if (closed) return true;
    DIR* listing = ::opendir("/proc/self/fd");
    if (!listing) return false;
    // Read whole before any is closed: closing while reading the directory
    // may skip entries.
    std::vector<int> open;
    while (const dirent* entry = ::readdir(listing)) {
        char* end = nullptr;
        const long number = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0') continue; // . and ..
        const int descriptor = static_cast<int>(number);
        if (descriptor > STDERR_FILENO && !std::binary_search(kept.begin(), kept.end(), descriptor) &&
            descriptor != ::dirfd(listing))
            open.push_back(descriptor);
    }
    ::closedir(listing);
    // On Linux a close that reports an error has released the number all the same.
    for (int descriptor : open)
        ::close(descriptor);
    return true;
}

bool set_limit(int resource, std::uint64_t value, const char* what) {
    rlimit limit{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
    if (resource == RLIMIT_CPU) limit.rlim_max = static_cast<rlim_t>(value + 1); // SIGXCPU first, then SIGKILL
    if (::setrlimit(resource, &limit) == 0) return true;
    std::cerr << "gatehouse serve-family: cannot set the " << what << " limit: " << std::strerror(errno) << "\n";
    return false;
}

} // namespace

int serve_family(int argc, char** argv) {
    int input = -1, output = -1;
    std::optional<std::uint64_t> memory_mb, cpu_seconds, open_files;
    const char* library = nullptr;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        auto number = [&](std::optional<std::uint64_t>& into) {
            if (i + 1 >= argc) return false;
            into = std::strtoull(argv[++i], nullptr, 10);
            return true;
        };
        std::optional<std::uint64_t> descriptor;
        if (arg == "--input" && number(descriptor))
            input = static_cast<int>(*descriptor);
        else if (arg == "--output" && number(descriptor))
            output = static_cast<int>(*descriptor);
        else if (arg == "--memory-mb" && number(memory_mb)) {
        } else if (arg == "--cpu-seconds" && number(cpu_seconds)) {
        } else if (arg == "--open-files" && number(open_files)) {
        } else if (arg == "--" && i + 1 < argc) {
            library = argv[++i];
        } else {
            std::cerr << "gatehouse serve-family: unexpected argument '" << arg << "'\n";
            return 2;
        }
    }
    if (input < 0 || output < 0 || !library) {
        std::cerr << "gatehouse serve-family: started by the host for a family with isolation: process; it needs "
                     "--input FD --output FD (the pipes from and to the host) and -- LIBRARY\n";
        return 2;
    }
    // Ends with the host, whatever it was doing.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // As in the host: a write to a closed pipe or socket is an error the
    // plugin sees (EPIPE), not the end of the process; and the stop signals
    // are the host's to act on (it asks this process to shut down, so the
    // plugin's own shutdown runs), not a service manager's to end it with.
    ::signal(SIGPIPE, SIG_IGN);
    sigset_t stops;
    sigemptyset(&stops);
    for (int sig : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&stops, sig);
    ::pthread_sigmask(SIG_BLOCK, &stops, nullptr);
    // Nothing of the host's but the pipes and the standard streams (the
    // host's spawn closed the rest already; this holds should another start
    // this verb); and the pipes are no program's that the plugin runs.
    if (!keep_only_standard_streams_and({input, output})) {
        const std::string why = std::strerror(errno);
        std::cerr << "gatehouse serve-family: cannot close the descriptors inherited from the host (close_range and "
                     "/proc/self/fd both failed: "
                  << why << "); the plugin is not loaded\n";
        return 1;
    }
    ::fcntl(input, F_SETFD, FD_CLOEXEC);
    ::fcntl(output, F_SETFD, FD_CLOEXEC);
#ifndef GATEHOUSE_UNDER_ASAN
    // Under AddressSanitizer its reserved shadow is beyond any address-space
    // bound; the host gave the sanitizer a resident-size watch instead.
    if (memory_mb && !set_limit(RLIMIT_AS, *memory_mb << 20, "address space")) return 1;
#endif
    if (cpu_seconds && !set_limit(RLIMIT_CPU, *cpu_seconds, "CPU time")) return 1;
    if (open_files && !set_limit(RLIMIT_NOFILE, *open_files, "open files")) return 1;
    // Named by its library until the library names its family, so a
    // process that dies loading it is told apart too.
    name_this_process(std::filesystem::path(library).stem().string());
    ServedFamily family(input, output); // serve() never returns: the process ends with _Exit
    g_served_family = &family;
    family.serve(library);
}

} // namespace gatehouse::isolation
