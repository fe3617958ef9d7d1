#include "isolation/family_process.hpp"

#include "isolation/address_sanitizer.hpp"
#include "isolation/own_process_group.hpp"
#include "gate/refusal.hpp"
#include "metrics/log_allowance.hpp"
#include "metrics/log_context.hpp"
#include "plugins/abi_text.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/host_api.hpp"
#include "protocol/utf8_text.hpp"
#include "transport/shared_reading.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

extern char** environ;

namespace gatehouse::isolation {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct FamilyProcess::Pending {
    std::mutex mutex;
    std::condition_variable arrived;
    std::deque<Frame> frames;
    std::size_t frame_bytes = 0; // of `frames`: bounded, see deliver
    bool gone = false;
    std::string why;

    // The call whose frames these are (see_to): for one answered later,
    // until it is answered.
    gh_call* call = nullptr;
    // The latest progress report past the child's budget, published once
    // there is room, and before the answer in any case.
    std::optional<Frame> progress_held;

    // A call answered later (begin_tool_call): no thread waits for it, and
    // its frames are seen to on the thread that reads them. Empty once
    // answered, and for a call whose thread waits.
    Answered answered;
    Elsewhere elsewhere;
    std::uint64_t id = 0;
    Clock::time_point deadline{};
    bool cancel_sent = false;
    bool killed = false;
    std::weak_ptr<Child> child;  // the process it was sent to
    std::optional<Frame> result; // arrived while its frames were still seen to
    bool seeing_to = false;      // its frames are being seen to, in order (`frames`): not answered meanwhile
};

namespace {

// Tokens that refill at `per_second` up to `burst`: how much of one kind of
// report a family's process may have the host publish.
class PublishBudget {
public:
    PublishBudget(double per_second, double burst) : per_second_(per_second), burst_(burst), tokens_(burst) {}

    // Whether one more may be published now.
    bool take() {
        std::lock_guard lock(mutex_);
        const auto now = Clock::now();
        tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - refilled_).count() * per_second_);
        refilled_ = now;
        if (tokens_ < 1) return false;
        tokens_ -= 1;
        return true;
    }

private:
    const double per_second_, burst_;
    std::mutex mutex_;
    double tokens_;
    Clock::time_point refilled_ = Clock::now();
};

// How many changes (notify_changed) of a family's process the host
// publishes: kBurst at once and kPerSecond after that. Each goes to every
// session that follows it, and in a cluster through Redis to every
// instance, so a process that reports changes without end must not have
// the host publish without end. Those past it are dropped, and counted in
// the log as the lines past a LogAllowance are.
class ChangeAllowance {
public:
    static constexpr double kPerSecond = 20;
    static constexpr double kBurst = 200;

    // Whether a change may be published now. Says under `label` as a flood
    // begins, and how many were dropped once changes are let through again.
    bool take(std::string_view label) {
        constexpr auto kReportEvery = std::chrono::seconds(1);
        const bool let_through = budget_.take();
        bool flooding = false;
        std::size_t not_published = 0;
        {
            std::lock_guard lock(mutex_);
            const auto now = Clock::now();
            if (let_through && dropped_ > 0 && now - reported_ >= kReportEvery) {
                not_published = std::exchange(dropped_, 0);
                reported_ = now;
            } else if (!let_through && dropped_++ == 0 && now - reported_ >= kReportEvery) {
                flooding = true;
                reported_ = now;
            }
        }
        if (flooding)
            spdlog::warn("[{}] reports more than {} changes a second; the next are dropped, not published", label,
                         static_cast<int>(kPerSecond));
        if (not_published > 0) spdlog::warn("[{}] {} changes it reported were not published", label, not_published);
        return let_through;
    }

private:
    PublishBudget budget_{kPerSecond, kBurst};
    std::mutex mutex_;
    Clock::time_point reported_{};
    std::size_t dropped_ = 0; // since the count was last told
};

// A family's process's progress reports, over all its calls: kBurst at
// once and kPerSecond after that. None is dropped: past it, each call holds
// its latest report until there is room, and publishes it before its
// answer in any case, so what a flood costs the clients is this budget and
// one report per call.
constexpr double kProgressPerSecond = 20;
constexpr double kProgressBurst = 50;

} // namespace

struct FamilyProcess::Child {
    pid_t pid = -1;
    std::string label; // the family, or the library's file name before the descriptor
    std::unique_ptr<FrameChannel> channel;
    int output_fd = -1; // the child's stdout and stderr, read into the log
    // Its lines, under its label: renamed as the label changes, while the
    // output's own thread writes with it. The log lines it sends, in a call
    // or outside any, take this same allowance.
    metrics::LogAllowance output_log{""};
    ChangeAllowance changes; // what it reports changed, to publish
    PublishBudget progress{kProgressPerSecond, kProgressBurst};
    std::thread reader, output_reader;
    // The reader's, kept once it started (under the family's mutex, before
    // the child is served): `reader` itself changes as it is joined.
    std::thread::id reader_id;
    // Waits for the process's end (a pidfd), which a program the plugin
    // started may outlive holding its pipe: then its group is killed and
    // the stream ended, so the end is seen whatever the plugin left behind.
    std::thread exit_watch;
    // Readable once the process has ended (a pidfd). Its output's reader
    // then ends with what the pipe holds, and not only when every writer
    // closed it: a helper the plugin started in a session of its own may
    // hold the pipe for hours, and the family's restart joins that reader.
    int exit_fd = -1;
    Clock::time_point started = Clock::now();
    std::mutex mutex;
    std::condition_variable ended;
    std::unordered_map<std::uint64_t, std::shared_ptr<Pending>> pending;
    bool gone = false;
    std::string kill_reason; // set when the host killed it, and why

    // Who reads the frames: the reader thread while no call waits, the
    // caller of a call that waits alone (read_here), never two at once. The
    // channel's reading side is touched by the one holding the reading.
    std::optional<transport::SharedReading> reading;
    std::string stream_why; // why the reading ended the child (a broken frame), if it did; under mutex

    void named(std::string name) {
        output_log.rename(name);
        label = std::move(name);
    }
    // Joins the threads of a child that is gone.
    void join() {
        if (reader.joinable()) reader.join();
        if (exit_watch.joinable()) exit_watch.join();
        if (output_reader.joinable()) output_reader.join();
        if (exit_fd >= 0) ::close(exit_fd);
        exit_fd = -1;
    }
};

namespace {

constexpr auto kFirstBackoff = 100ms;
constexpr auto kLongestBackoff = 30s;
constexpr auto kLivedLongEnough = 30s; // a crash after this long starts the backoff over
constexpr auto kStopCheck = 100ms;     // how often a child's start looks whether the host stops
constexpr auto kPoll = 20ms;           // how often a waiting call looks at its cancellation and deadline
constexpr auto kShutdownWait = 10s;
// What a call's frames may hold while its thread has not taken them: two of
// the largest frames. A child that sends more for one call (a flood while
// the call's thread waits on a host function) is killed.
constexpr std::size_t kMostQueuedPerCall = 2 * kMaxFrameBytes;

std::string describe_exit(int status) {
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char* abbrev = sigabbrev_np(sig);
        const char* text = sigdescr_np(sig);
        return "was killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "") +
               (text ? std::string(": ") + text : "");
    }
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    return "ended (wait status " + std::to_string(status) + ")";
}

// SIGKILL to the child's process group, which holds what the plugin
// started, and to the child itself, should the plugin have moved it to
// another group. Only while the child is not reaped (its Child's mutex held
// around the check of its pid and the reaping), so never to a reused pid.
void signal_all(pid_t pid) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
}

// A log frame, in a call or outside any: its lines take the same allowance
// as the child's output, one line at a time, each under the family's label
// and cut at the allowance's bound, so a plugin can neither flood the host's
// log nor write a line that reads as the host's. In a call its text is
// masked first, as the call's own lines are in process, and the lines the
// log let through also go to the call's client (notifications/message):
// what the client hears is bounded as the log is.
void log_frame(FamilyProcess::Child& child, gh_call* call, const Frame& frame) {
    std::string_view text = frame.field(0);
    std::string masked;
    if (call && call->environment && call->environment->masks_passwords()) {
        masked = call->environment->masked(text);
        text = masked;
    }
    const auto level = plugins::log_level(frame.code);
    std::string heard;
    bool any_heard = false;
    const auto write = [&](std::string_view line) {
        if (!child.output_log.write(level, line)) return;
        if (any_heard) heard += '\n';
        heard += protocol::cut_utf8(line, metrics::LogAllowance::kLineBytes, " (cut)");
        any_heard = true;
    };
    for (std::size_t end; (end = text.find('\n')) != std::string_view::npos; text.remove_prefix(end + 1))
        write(text.substr(0, end));
    if (!text.empty()) write(text);
    if (any_heard && call && call->environment) call->environment->log(frame.code, call->family, heard);
}

// The trace of the request a call serves, for the host's log lines about
// it on a thread that is not the call's own; the call must stay meanwhile
// (its frames are being seen to).
const metrics::TraceContext* trace_of(gh_call* call) {
    return call && call->environment ? call->environment->trace() : nullptr;
}

// The frame that asks the child to run a call: its own fields and, for a
// kind with rounds, the round's input (carries_round).
Frame call_frame(CallKind kind, std::uint32_t index, std::uint64_t id, std::vector<std::string> fields,
                 const gh_call* call) {
    if (carries_round(kind)) {
        fields.emplace_back(call ? call->input_responses : std::string_view("{}"));
        fields.emplace_back(call ? call->request_state : std::string_view());
    }
    return Frame{FrameType::call, static_cast<std::int32_t>(kind), index, id, std::move(fields)};
}

// A progress frame's report, published in the call it belongs to.
void publish_progress(gh_call* call, const Frame& frame) {
    plugins::host_api()->progress(call, field_double(frame.field(0)), field_double(frame.field(1)),
                                  plugins::abi_str(frame.field(2)));
}

// Why a call of `bytes` is refused before it is sent.
std::string too_large_for_a_frame(std::size_t bytes) {
    return "The call is " + std::to_string(bytes) + " bytes, more than a family's process takes in one piece (" +
           std::to_string(kMaxFrameBytes >> 20) + " MiB); send less.";
}

// What a frame with no call (id 0) asks: a log line or a change the plugin
// reported from a thread of its own.
void outside_any_call(FamilyProcess::Child& child, const Frame& frame) {
    if (frame.type == FrameType::log) log_frame(child, nullptr, frame);
    if (frame.type == FrameType::notify && child.changes.take(child.label))
        plugins::host_api()->notify_changed(nullptr, frame.code, plugins::abi_str(frame.field(0)));
}

// The child's environment: the host's, or with a list the basic variables,
// those listed, and what the host's own code in the child reads to run (its
// log level, where its libraries are, the sanitizers' options). Under
// AddressSanitizer an address-space limit would stop the sanitizer itself,
// so the memory limit becomes its resident-size watch instead.
std::vector<std::string> child_environment(const FamilyProcessOptions& options) {
    std::vector<std::string> env;
    if (!options.environment) {
        for (char** e = environ; e && *e; ++e)
            env.emplace_back(*e);
    } else {
        auto chosen = basic_environment();
        const auto take = [&](const std::string& name) {
            if (const char* value = std::getenv(name.c_str())) chosen[name] = value;
        };
        for (const char* name : {"GATEHOUSE_LOG", "LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
            take(name);
        for (const auto& name : *options.environment)
            take(name);
        for (const auto& [name, value] : chosen)
            env.push_back(name + "=" + value);
    }
    [[maybe_unused]] const ProcessLimits& limits = options.limits;
#ifdef GATEHOUSE_UNDER_ASAN
    if (limits.memory_mb) {
        const std::string watch = "hard_rss_limit_mb=" + std::to_string(*limits.memory_mb);
        bool found = false;
        for (auto& variable : env)
            if (variable.rfind("ASAN_OPTIONS=", 0) == 0) {
                variable += ":" + watch;
                found = true;
            }
        if (!found) env.push_back("ASAN_OPTIONS=" + watch);
    }
#endif
    return env;
}

// What a refused thread or process start (EAGAIN) means here, said
// beside the system's own words so an operator knows what to raise.
std::string refused_start(int error) {
    std::string said = std::strerror(error);
    if (error == EAGAIN)
        said += ": the host is at its limit of tasks (its threads and processes together: ulimit -u, or its "
                "cgroup's pids.max)";
    return said;
}

std::string refused_start(const std::exception& e) {
    if (const auto* system = dynamic_cast<const std::system_error*>(&e);
        system && system->code().category() == std::generic_category())
        return refused_start(system->code().value());
    return e.what();
}

std::vector<char*> pointers(std::vector<std::string>& words) {
    std::vector<char*> out;
    for (auto& word : words)
        out.push_back(word.data());
    out.push_back(nullptr);
    return out;
}

} // namespace

FamilyProcess::FamilyProcess(FamilyProcessOptions options) : options_(std::move(options)) {
    auto child = spawn();
    descriptor_bytes_ = read_descriptor(*child);
    try {
        proxy_ = std::make_unique<ProxyDescriptor>(descriptor_bytes_, *this);
    } catch (const BrokenChannel& e) {
        abandon(*child);
        throw std::runtime_error(std::string("its process offered a descriptor that cannot be read: ") + e.what());
    }
    const auto& family = proxy_->descriptor()->family;
    family_.assign(family.ptr, family.len);
    child->named(family_);
    std::lock_guard lock(mutex_);
    child_ = std::move(child);
}

FamilyProcess::~FamilyProcess() {
    std::shared_ptr<Child> child;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        stop_asked_ = true;
        child = child_;
        changed_.notify_all();
    }
    if (supervisor_.joinable()) supervisor_.join();
    if (child && child->reader.joinable()) {
        // The plugin's shutdown runs in the child, which then exits.
        child->channel->send(Frame{FrameType::shutdown, 0, 0, 0, {}});
        std::unique_lock lock(child->mutex);
        if (!child->ended.wait_for(lock, kShutdownWait, [&] { return child->gone; })) {
            lock.unlock();
            kill(*child, "it did not stop within 10 s of being asked to");
        }
    } else if (child) {
        // Never initialized: nothing of the plugin's to shut down.
        kill(*child, "");
        child_gone(child, "");
    }
    if (child) child->join();
    std::lock_guard lock(mutex_);
    for (auto& retired : retired_)
        retired->join();
}

std::shared_ptr<FamilyProcess::Child> FamilyProcess::spawn() {
    // Two pipes, one each way (a small frame costs less through a pipe than
    // through a socket), and one for the child's output.
    int to_child[2] = {-1, -1}, from_child[2] = {-1, -1}, output[2] = {-1, -1};
    const auto close_all = [&] {
        for (int* pair : {to_child, from_child, output})
            for (int i = 0; i < 2; ++i)
                if (pair[i] >= 0) ::close(pair[i]);
    };
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
        const int error = errno;
        close_all();
        throw std::runtime_error(std::string("cannot make the family process's pipes: ") + std::strerror(error));
    }
    if (::pipe2(output, O_CLOEXEC) != 0) {
        const int error = errno;
        close_all();
        throw std::runtime_error(std::string("cannot make the family process's output pipe: ") + std::strerror(error));
    }
    std::vector<std::string> args{"gatehouse", "serve-family", "--input", "3", "--output", "4"};
    const auto& limits = options_.limits;
    if (limits.memory_mb) args.insert(args.end(), {"--memory-mb", std::to_string(*limits.memory_mb)});
    if (limits.cpu_seconds) args.insert(args.end(), {"--cpu-seconds", std::to_string(*limits.cpu_seconds)});
    if (limits.open_files) args.insert(args.end(), {"--open-files", std::to_string(*limits.open_files)});
    args.insert(args.end(), {"--", options_.library.string()});
    auto env = child_environment(options_);
    auto argv = pointers(args);
    auto envp = pointers(env);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 3);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 4);
    // The child's stdout is never the stdio transport's: both go to the log.
    posix_spawn_file_actions_adddup2(&actions, output[1], 1);
    posix_spawn_file_actions_adddup2(&actions, output[1], 2);
    // Nothing else of the host's: descriptors the host did not make
    // close-on-exec (its real stdout while plugins load, a listening socket,
    // a library's sockets) would let the plugin answer the host's clients.
    // glibc closes them by /proc/self/fd where close_range is refused.
    posix_spawn_file_actions_addclosefrom_np(&actions, 5);
    // A process group of its own, so what the plugin starts ends with it.
    const OwnProcessGroup attributes;
    pid_t pid = -1;
    // The running binary itself, not the path it was started from: after an
    // upgrade renamed a new file over it, that path names another binary,
    // or reads "... (deleted)" and names none, and the family could never
    // start again until the host did.
    const int spawned = ::posix_spawn(&pid, "/proc/self/exe", &actions, attributes.get(), argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    // The child's ends are the child's alone.
    for (int* end : {&to_child[0], &from_child[1], &output[1]}) {
        ::close(*end);
        *end = -1;
    }
    if (spawned != 0) {
        close_all();
        throw std::runtime_error("cannot start the family process: " + refused_start(spawned));
    }
    // From here a process runs: should any step below fail (a thread the
    // system refuses, at its process limit; memory), it is killed and reaped
    // and what was made for it undone, so a failed start leaves neither a
    // process nor a joinable thread behind, whose destruction would end the host.
    std::shared_ptr<Child> child;
    bool output_handed_on = false; // to the output's reader, which closes it
    try {
        child = std::make_shared<Child>();
        child->pid = pid;
        child->named(family_ != "plugin" ? family_ : options_.library.filename().string());
        child->channel = std::make_unique<FrameChannel>(from_child[0], to_child[1]);
        from_child[0] = to_child[1] = -1;
        child->channel->bound_each_send(options_.send_stall);
        child->exit_fd = watch_exit(pid);
        // The reading ends with the process, whoever else it left holding
        // the pipe's writing end (a program it started).
        child->reading.emplace(
            child->channel->input_fd(), [this, child = child.get()] { return read_available(*child); }, child->exit_fd);
        child->output_fd = output[0];
        child->output_reader = std::thread([child = child.get()] {
            metrics::copy_lines_to_log(child->output_fd, child->output_log, child->exit_fd);
            ::close(child->output_fd);
        });
        output_handed_on = true;
        if (child->exit_fd >= 0) {
            child->exit_watch = std::thread([child = child.get()] {
                pollfd ended{child->exit_fd, POLLIN, 0};
                while (::poll(&ended, 1, -1) < 0 && errno == EINTR) {
                }
                // Not reaped here: child_gone reads how it ended. Signalled
                // under the mutex the reaping holds, so never a reused pid.
                {
                    std::lock_guard lock(child->mutex);
                    if (child->pid > 0) signal_all(child->pid);
                }
                child->channel->shut_down();
            });
        } else {
            spdlog::warn("[{}] cannot watch its process's end (pidfd_open: {}); a program it starts that keeps its "
                         "pipe open can hide a crash, or its output open hold up its restart",
                         child->label, std::strerror(errno));
        }
        return child;
    } catch (const std::exception& e) {
        if (child) {
            abandon(*child);
        } else {
            signal_all(pid);
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
        if (output_handed_on) output[0] = -1; // its reader closes it
        close_all();
        throw std::runtime_error("cannot start the threads that serve the family process: " + refused_start(e));
    }
}

std::optional<Frame> FamilyProcess::await_frame(Child& child, FrameType type, std::chrono::milliseconds timeout,
                                                const char* not_in_time, std::string& why) {
    // The whole wait is bounded, not each read: a child that trickles bytes
    // or sends lines outside any call does not stretch it.
    const auto deadline = Clock::now() + timeout;
    try {
        for (;;) {
            while (auto frame = child.channel->next_buffered()) {
                if (frame->type == type) return frame;
                outside_any_call(child, *frame);
            }
            if (stop_asked_.load()) {
                why = "the host is stopping";
                return std::nullopt;
            }
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (left <= 0ms) break;
            // In slices: a child that never answers holds up the host's
            // stop by one slice at most, not by the whole load or init time.
            // Its end is seen by its pidfd too: a program it started may
            // hold the pipe's writing end.
            pollfd ready[2] = {{child.channel->input_fd(), POLLIN, 0}, {child.exit_fd, POLLIN, 0}};
            const int polled = ::poll(ready, 2, static_cast<int>(std::min(left, kStopCheck).count()));
            if (polled < 0 && errno == EINTR) continue;
            if (polled == 0) continue;
            if (polled > 0 && ready[0].revents == 0) return std::nullopt;       // it ended with nothing more to read
            if (polled < 0 || !child.channel->read_some()) return std::nullopt; // its stream ended
        }
    } catch (const BrokenChannel& e) {
        why = std::string("its process sent a broken frame: ") + e.what();
        return std::nullopt;
    }
    why = std::string(not_in_time) + " within " + std::to_string(timeout.count()) + " ms";
    return std::nullopt;
}

std::optional<int> FamilyProcess::reap(Child& child) {
    std::lock_guard lock(child.mutex);
    if (child.pid <= 0) return std::nullopt;
    int status = 0;
    signal_all(child.pid);
    ::waitpid(child.pid, &status, 0);
    child.pid = -1;
    return status;
}

std::optional<int> FamilyProcess::abandon(Child& child) {
    const auto status = reap(child);
    if (child.channel) child.channel->shut_down();
    child.join();
    return status;
}

std::string FamilyProcess::read_descriptor(Child& child) {
    std::string why;
    if (auto frame = await_frame(child, FrameType::descriptor, options_.load_timeout,
                                 "its process did not offer a descriptor", why)) {
        if (frame->code == 0) return frame->field(0);
        why = frame->field(0);
    }
    const int status = abandon(child).value_or(0);
    if (why.empty()) why = "its process " + describe_exit(status) + " before it offered a descriptor";
    throw std::runtime_error(why);
}

bool FamilyProcess::run_init(Child& child, std::string& error) {
    std::string why;
    if (child.channel->send(Frame{FrameType::init, 0, 0, 0, {init_config_}}))
        if (auto frame = await_frame(child, FrameType::result, options_.init_timeout, "init did not return", why)) {
            if (frame->code != GH_STATUS_OK) {
                error = frame->field(0);
                if (error.empty()) error = "init returned status " + std::to_string(frame->code);
                reap(child); // nothing of it serves; no zombie per failed start either
                return false;
            }
            if (deliver_buffered(child, why)) return true;
        }
    const int status = reap(child).value_or(0);
    if (why.empty()) why = "its process " + describe_exit(status) + " during init";
    error = why;
    return false;
}

bool FamilyProcess::init(const std::string& config_json, std::string& error) {
    init_config_ = config_json;
    std::shared_ptr<Child> child;
    {
        std::lock_guard lock(mutex_);
        child = child_;
    }
    if (!child || !run_init(*child, error)) return false;
    try {
        {
            std::lock_guard lock(mutex_); // as on a restart: its reader is known before anything it reads
            start_reading(child);
        }
        supervisor_ = std::thread([this] { supervise(); });
    } catch (const std::system_error& e) {
        // The destructor ends the child and joins what did start.
        error = "cannot start the threads that serve its process: " + refused_start(e);
        return false;
    }
    return true;
}

bool FamilyProcess::deliver_buffered(Child& child, std::string& why) {
    try {
        while (auto frame = child.channel->next_buffered())
            deliver(child, std::move(*frame));
        return true;
    } catch (const BrokenChannel& e) {
        why = std::string("its process sent a broken frame: ") + e.what();
        return false;
    }
}

void FamilyProcess::start_reading(const std::shared_ptr<Child>& child) {
    child->reader = std::thread([this, child] { read_frames(child); });
    child->reader_id = child->reader.get_id();
}

void FamilyProcess::read_frames(std::shared_ptr<Child> child) {
    child->reading->serve_own_thread();
    std::string why;
    {
        std::lock_guard lock(child->mutex);
        why = child->stream_why;
    }
    child_gone(child, why);
}

bool FamilyProcess::read_available(Child& child) {
    try {
        const bool open = child.channel->read_some();
        // At the stream's end too: whole frames still held are the child's
        // last words; only what is left after them was cut short.
        while (auto frame = child.channel->next_buffered())
            deliver(child, std::move(*frame));
        if (open) return true;
        if (child.channel->holds_partial()) throw BrokenChannel("the stream ended inside a frame");
        return false;
    } catch (const BrokenChannel& e) {
        const std::string why = std::string("it sent a broken frame (") + e.what() + ") and was killed";
        {
            std::lock_guard lock(child.mutex);
            child.stream_why = why;
        }
        kill(child, why);
        return false;
    }
}

void FamilyProcess::deliver(Child& child, Frame frame) {
    if (frame.id == 0) {
        outside_any_call(child, frame);
        return;
    }
    std::shared_ptr<Pending> pending;
    {
        std::lock_guard lock(child.mutex);
        auto found = child.pending.find(frame.id);
        if (found != child.pending.end()) pending = found->second;
    }
    if (!pending) return; // a call that is over; its late frames mean nothing
    if (pending->elsewhere) return deliver_later(child, pending, std::move(frame));
    bool flooded = false;
    {
        std::lock_guard lock(pending->mutex);
        pending->frame_bytes += frame.length();
        flooded = pending->frame_bytes > kMostQueuedPerCall;
        if (!flooded) pending->frames.push_back(std::move(frame));
    }
    if (flooded) {
        kill(child, "it sent more than " + std::to_string(kMostQueuedPerCall >> 20) +
                        " MiB of frames for one call before the host took any of them, and was killed");
        return;
    }
    pending->arrived.notify_one();
}

bool FamilyProcess::send(Child& child, Frame frame) {
    int error = 0;
    if (child.channel->send(frame, error)) return true;
    // Only a stall is the child's fault here; a channel already shut (the
    // child ended) leaves the crash its own cause.
    if (error == EAGAIN || error == EWOULDBLOCK)
        kill(child, "it did not take what the host sent it within " + std::to_string(options_.send_stall.count()) +
                        " s, and was killed");
    return false;
}

void FamilyProcess::kill(Child& child, const std::string& reason) {
    std::lock_guard lock(child.mutex);
    if (child.gone || child.pid <= 0) return;
    if (child.kill_reason.empty()) child.kill_reason = reason;
    signal_all(child.pid);
}

void FamilyProcess::child_gone(const std::shared_ptr<Child>& child, const std::string& why) {
    std::unordered_map<std::uint64_t, std::shared_ptr<Pending>> pending;
    std::string reason;
    {
        std::lock_guard lock(child->mutex);
        if (child->gone) return;
        reason = child->kill_reason.empty() ? why : child->kill_reason;
    }
    // The stream's end may come before the child's: a broken frame, or a
    // child that closed its pipe and lives on, is ended here; and
    // whatever the plugin started and left behind goes too. A child that
    // ended already keeps the status it ended with.
    if (const auto status = reap(*child); status && reason.empty()) reason = "its process " + describe_exit(*status);
    // The crash is counted, and the restart scheduled, before any call
    // learns the child is gone: an agent told FAMILY_CRASHED that then reads
    // the metrics or the status sees the crash it was told of.
    bool counted = false;
    std::chrono::milliseconds backoff{0};
    unsigned in_a_row = 0;
    {
        std::lock_guard lock(mutex_);
        if (child_ == child) child_.reset();
        if (!stopping_) {
            counted = true;
            crashes_++;
            if (Clock::now() - child->started >= kLivedLongEnough) crashes_in_a_row_ = 0;
            backoff = schedule_restart();
            in_a_row = crashes_in_a_row_;
            last_crash_ = reason;
            retired_.push_back(child);
        }
    }
    {
        std::lock_guard lock(child->mutex);
        child->gone = true;
        child->pid = -1;
        pending.swap(child->pending);
    }
    child->ended.notify_all();
    child->channel->shut_down();
    for (auto& [id, call] : pending) {
        {
            std::lock_guard lock(call->mutex);
            call->gone = true;
            call->why = reason;
        }
        call->arrived.notify_one();
        if (call->elsewhere) settle(call);
    }
    if (!counted) return;
    spdlog::error("family '{}' stopped: {}; {} call(s) in flight answered FAMILY_CRASHED; starting it again in {} ms "
                  "({} crash(es) in a row)",
                  family_, reason, pending.size(), backoff.count(), in_a_row);
    changed_.notify_all();
}

std::chrono::milliseconds FamilyProcess::schedule_restart() {
    ++crashes_in_a_row_;
    const std::chrono::milliseconds backoff = std::min<std::chrono::milliseconds>(
        kFirstBackoff * (1u << std::min(crashes_in_a_row_ - 1, 9u)), kLongestBackoff);
    next_start_ = Clock::now() + backoff;
    restart_wanted_ = true;
    return backoff;
}

void FamilyProcess::supervise() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        if (!retired_.empty()) {
            joining_ = std::move(retired_);
            retired_.clear();
            lock.unlock();
            for (auto& child : joining_)
                child->join();
            lock.lock();
            joining_.clear();
            continue;
        }
        if (restart_wanted_ && Clock::now() >= next_start_) {
            restart_wanted_ = false;
            lock.unlock();
            std::shared_ptr<Child> child;
            std::string error;
            try {
                child = spawn();
                const auto bytes = read_descriptor(*child);
                if (bytes != descriptor_bytes_) {
                    abandon(*child);
                    throw std::runtime_error("its library now offers another descriptor than the one being served; "
                                             "restart the host to serve the new one");
                }
                if (!run_init(*child, error)) {
                    abandon(*child);
                    throw std::runtime_error("init failed: " + error);
                }
            } catch (const std::exception& e) {
                error = e.what();
                child.reset();
            }
            lock.lock();
            if (!child && stopping_) break; // a start cut short by the stop is no failure to report
            if (!child) {
                spdlog::error("family '{}' did not start again: {}; next try in {} ms", family_, error,
                              schedule_restart().count());
                continue;
            }
            if (stopping_) {
                lock.unlock();
                kill(*child, "");
                child_gone(child, "");
                child->join();
                lock.lock();
                break;
            }
            child->named(family_);
            // Before child_ is set, under the lock: a reader that sees the
            // child end at once finds it serving, and takes it away again.
            try {
                start_reading(child);
            } catch (const std::system_error& e) {
                lock.unlock();
                abandon(*child);
                lock.lock();
                spdlog::error("family '{}' did not start again: cannot start the thread that reads its process: {}; "
                              "next try in {} ms",
                              family_, refused_start(e), schedule_restart().count());
                continue;
            }
            child_ = child;
            spdlog::info("family '{}' serves again (process {})", family_, child->pid);
            continue;
        }
        // Before the count is read: a call begun meanwhile either sees it
        // false and wakes this thread, or is counted below.
        looking_after_later_ = false;
        if (answered_later_ > 0) {
            // Calls no thread waits for: their cancellation and deadline are looked after here.
            looking_after_later_ = true;
            lock.unlock();
            look_after_later_calls();
            lock.lock();
            const auto wake = Clock::now() + kPoll;
            changed_.wait_until(lock, restart_wanted_ ? std::min(wake, next_start_) : wake);
        } else if (restart_wanted_) {
            changed_.wait_until(lock, next_start_);
        } else {
            changed_.wait(lock);
        }
    }
}

bool FamilyProcess::serving() const {
    std::lock_guard lock(mutex_);
    return child_ != nullptr;
}

int32_t FamilyProcess::crashed(gh_sink* out, gh_sink* err, const std::string& why, bool reached) const {
    std::int64_t retry_ms;
    {
        std::lock_guard lock(mutex_);
        retry_ms = std::max<std::int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(next_start_ - Clock::now()).count());
    }
    const std::string message =
        reached ? "The family '" + family_ + "' stopped while serving this call (" + why +
                      "), so whether it took effect is unknown; the host is starting it again. Try again shortly."
                : "The family '" + family_ + "' is not serving right now (" + why +
                      "), so the call did not run; the host is starting it again. Try again in " +
                      std::to_string(retry_ms + 100) + " ms.";
    if (err) {
        err->bytes += message + "\n";
        return GH_STATUS_INTERNAL;
    }
    if (!out) return GH_STATUS_INTERNAL;
    const nlohmann::json refusal = {{"code", gate::refusal_code::family_crashed},
                                    {"message", message},
                                    {"next", {{"action", "retry"}, {"retryAfterMs", retry_ms + 100}}}};
    out->bytes = refusal.dump();
    return GH_STATUS_REFUSED;
}

void FamilyProcess::run_host_call(gh_call* call, Child& child, const Frame& frame) {
    const gh_host_api* api = plugins::host_api();
    gh_sink answer;
    int32_t status = GH_STATUS_INTERNAL;
    const auto& a = frame.field(0);
    switch (static_cast<HostFunction>(frame.code)) {
    case HostFunction::call_context: {
        const gh_str context = api->call_context(call);
        answer.bytes.assign(context.ptr, context.len);
        status = GH_STATUS_OK;
        break;
    }
    case HostFunction::session_describe: status = api->session_describe(call, plugins::abi_str(a), &answer); break;
    case HostFunction::session_open: status = api->session_open(call, plugins::abi_str(a), &answer); break;
    case HostFunction::rules_accept:
        status = api->rules_accept(call, plugins::abi_str(a), plugins::abi_str(frame.field(1)), &answer);
        break;
    case HostFunction::critical_read: status = api->critical_read(call, plugins::abi_str(a), &answer); break;
    case HostFunction::state_get: status = api->state_get(call, plugins::abi_str(a), &answer); break;
    case HostFunction::state_put:
        status = api->state_put(call, plugins::abi_str(a), plugins::abi_str(frame.field(1)), field_u64(frame.field(2)));
        break;
    case HostFunction::state_erase: status = api->state_erase(call, plugins::abi_str(a)); break;
    case HostFunction::state_take: status = api->state_take(call, plugins::abi_str(a), &answer); break;
    case HostFunction::store_credentials: status = api->store_credentials(call, &answer); break;
    default: status = GH_STATUS_INVALID_ARGS; break;
    }
    send(child, Frame{FrameType::host_reply, status, 0, frame.id, {std::move(answer.bytes)}});
}

std::string FamilyProcess::hung_call() const {
    return "a call ran " + std::to_string((options_.call_deadline + options_.kill_grace).count()) +
           " ms, past its deadline and the grace after it, so its process was killed";
}

bool FamilyProcess::on_own_thread() const {
    const auto me = std::this_thread::get_id();
    std::lock_guard lock(mutex_);
    if (supervisor_.get_id() == me) return true;
    if (child_ && child_->reader_id == me) return true;
    const auto reads_here = [&](const std::shared_ptr<Child>& child) { return child->reader_id == me; };
    return std::any_of(retired_.begin(), retired_.end(), reads_here) ||
           std::any_of(joining_.begin(), joining_.end(), reads_here);
}

void FamilyProcess::begin_tool_call(void* tool_data, gh_call* call, std::string arguments, Answered answered,
                                    Elsewhere elsewhere) {
    const std::uint32_t index = ProxyDescriptor::target_of(tool_data).index;
    auto pending = std::make_shared<Pending>();
    pending->answered = std::move(answered);
    pending->elsewhere = std::move(elsewhere);
    pending->call = call;
    pending->deadline = Clock::now() + options_.call_deadline + options_.kill_grace;
    std::shared_ptr<Child> child;
    std::string down;
    {
        std::lock_guard lock(mutex_);
        child = child_;
        pending->id = next_id_++;
        if (!child) down = last_crash_;
    }
    const auto answer_now = [&](const std::string& why) {
        gh_sink out;
        const int32_t status = crashed(&out, nullptr, why, false);
        Answered now = std::move(pending->answered);
        now(status, std::move(out.bytes));
    };
    if (!child) return answer_now(down.empty() ? "its process ended" : down);
    std::vector<std::string> fields;
    fields.reserve(3);
    fields.push_back(std::move(arguments));
    Frame frame = call_frame(CallKind::tool, index, pending->id, std::move(fields), call);
    if (frame.length() > kMaxFrameBytes) {
        Answered now = std::move(pending->answered);
        return now(GH_STATUS_INVALID_ARGS, too_large_for_a_frame(frame.length()));
    }
    pending->child = child;
    {
        std::lock_guard lock(child->mutex);
        if (child->gone) {
            // Outside the child's lock: the answer runs the caller's layers.
            child.reset();
        } else {
            child->pending.emplace(pending->id, pending);
        }
    }
    if (!child) return answer_now("its process has just ended");
    // The supervisor looks after the call's cancellation and deadline: woken
    // when it is not already looking (it looks every kPoll while any is out).
    answered_later_++;
    if (!looking_after_later_.load()) {
        std::lock_guard lock(mutex_);
        changed_.notify_all();
    }
    send(*child, std::move(frame)); // a child that takes nothing is killed: its end answers the call
}

void FamilyProcess::deliver_later(Child& child, const std::shared_ptr<Pending>& pending, Frame frame) {
    if (frame.type == FrameType::result) {
        {
            std::lock_guard lock(pending->mutex);
            pending->result = std::move(frame);
        }
        return settle(pending);
    }
    // Every frame of a call is seen to in the order it came, one at a time,
    // as the call's own thread would, and outside the call's lock (what it
    // calls may wait: a client's stream, the notification bus). While one
    // is (`seeing_to`), the call is not answered (settle waits), so it and
    // its environment are there, and the frames behind it queue. A host
    // call runs elsewhere (a host function may wait on a store), and the
    // frames behind it after it there; any other frame is seen to here.
    bool here = false, start = false, flooded = false;
    {
        std::lock_guard lock(pending->mutex);
        if (!pending->call) return; // answered: the child's end came first
        pending->frame_bytes += frame.length();
        flooded = pending->frame_bytes > kMostQueuedPerCall;
        if (!flooded) {
            pending->frames.push_back(std::move(frame));
            if (!std::exchange(pending->seeing_to, true)) {
                start = true;
                here = pending->frames.back().type != FrameType::host_call;
            }
        }
    }
    if (flooded)
        return kill(child, "it sent more than " + std::to_string(kMostQueuedPerCall >> 20) +
                               " MiB of frames for one call before the host took any of them, and was killed");
    if (here)
        see_to_frames(pending);
    else if (start)
        pending->elsewhere([this, pending] { see_to_frames(pending); });
}

void FamilyProcess::see_to(Child& child, Pending& pending, const Frame& frame) {
    const gh_host_api* api = plugins::host_api();
    switch (frame.type) {
    case FrameType::host_call: run_host_call(pending.call, child, frame); return;
    case FrameType::log: log_frame(child, pending.call, frame); return;
    case FrameType::progress:
        // Past the child's budget the latest is held, and published when
        // there is room (look_after_later_calls), before the answer in any case.
        if (!child.progress.take()) {
            std::lock_guard lock(pending.mutex);
            pending.progress_held = frame;
            return;
        }
        {
            std::lock_guard lock(pending.mutex);
            pending.progress_held.reset();
        }
        publish_progress(pending.call, frame);
        return;
    case FrameType::notify:
        if (child.changes.take(child.label))
            api->notify_changed(pending.call, frame.code, plugins::abi_str(frame.field(0)));
        return;
    default: return;
    }
}

void FamilyProcess::see_to_frames(const std::shared_ptr<Pending>& pending) {
    const std::shared_ptr<Child> child = pending->child.lock();
    for (;;) {
        Frame frame;
        {
            std::lock_guard lock(pending->mutex);
            if (pending->frames.empty() || !child) {
                pending->frames.clear();
                pending->frame_bytes = 0;
                pending->seeing_to = false;
                break;
            }
            frame = std::move(pending->frames.front());
            pending->frames.pop_front();
            pending->frame_bytes -= std::min(pending->frame_bytes, frame.length());
        }
        // What the host logs for the call, the plugin's own lines among it,
        // belongs to the call's trace, as on the thread the call began on;
        // only while the frame is seen to, when the call cannot be answered
        // (and its request freed) under the scope.
        const metrics::LogScope scope(trace_of(pending->call));
        // A fault here loses what this frame asked, not the call, nor the
        // reading of the family's other calls.
        try {
            see_to(*child, *pending, frame);
        } catch (const std::exception& e) {
            spdlog::error("family '{}': a frame of a call could not be seen to: {}", family_, e.what());
        }
    }
    settle(pending);
}

void FamilyProcess::settle(const std::shared_ptr<Pending>& pending) {
    Answered answered;
    std::optional<Frame> result, progress;
    bool gone;
    std::string why;
    gh_call* call;
    {
        std::lock_guard lock(pending->mutex);
        if (!pending->answered || pending->seeing_to || !(pending->result || pending->gone)) return;
        answered = std::move(pending->answered);
        pending->answered = nullptr;
        result = std::move(pending->result);
        progress = std::move(pending->progress_held);
        gone = pending->gone && !result;
        why = pending->why;
        call = pending->call;
        pending->call = nullptr;
    }
    answered_later_--;
    if (const auto child = pending->child.lock()) {
        std::lock_guard lock(child->mutex);
        child->pending.erase(pending->id);
    }
    // The latest progress held back goes out before the answer, as the
    // client should see it last.
    if (progress) publish_progress(call, *progress);
    int32_t status;
    std::string bytes;
    if (gone) {
        gh_sink out;
        status = crashed(&out, nullptr, why, true);
        bytes = std::move(out.bytes);
    } else {
        status = result->code;
        if (!result->fields.empty()) bytes = std::move(result->fields.front());
    }
    // The answer runs the call's layers here, on the thread that reads the
    // child (or a worker): a fault in them loses that call's answer, as a
    // worker's would, never the reading of the family's other calls.
    try {
        answered(status, std::move(bytes));
    } catch (const std::exception& e) {
        spdlog::error("family '{}': the answer to a call could not be seen to and was abandoned: {}", family_,
                      e.what());
    }
}

void FamilyProcess::look_after_later_calls() {
    std::shared_ptr<Child> child;
    {
        std::lock_guard lock(mutex_);
        child = child_;
    }
    if (!child) return;
    std::vector<std::shared_ptr<Pending>> later;
    {
        std::lock_guard lock(child->mutex);
        for (const auto& [id, pending] : child->pending)
            if (pending->elsewhere) later.push_back(pending);
    }
    const gh_host_api* api = plugins::host_api();
    const auto now = Clock::now();
    for (const auto& pending : later) {
        bool cancel = false, hung = false;
        std::optional<Frame> progress;
        {
            std::lock_guard lock(pending->mutex);
            if (!pending->call) continue; // answered meanwhile
            if (!pending->cancel_sent && api->is_cancelled(pending->call)) cancel = pending->cancel_sent = true;
            if (!pending->killed && now >= pending->deadline) hung = pending->killed = true;
            // Progress held past the budget goes out once there is room, as
            // a frame of the call (in its order, the call kept meanwhile).
            if (pending->progress_held && !pending->seeing_to && child->progress.take()) {
                progress = std::move(pending->progress_held);
                pending->progress_held.reset();
                pending->seeing_to = true;
            }
        }
        if (progress) {
            {
                const metrics::LogScope scope(trace_of(pending->call)); // the call stays: seeing_to
                try {
                    publish_progress(pending->call, *progress);
                } catch (const std::exception& e) {
                    spdlog::error("family '{}': a call's progress could not be published: {}", family_, e.what());
                }
            }
            // Frames that came meanwhile queued behind this one, and no one
            // started on them (seeing_to was taken): they are seen to now,
            // on a worker (one may be a host function the child waits for).
            bool queued;
            {
                std::lock_guard lock(pending->mutex);
                queued = !pending->frames.empty();
                if (!queued) pending->seeing_to = false;
            }
            if (queued)
                pending->elsewhere([this, pending] { see_to_frames(pending); });
            else
                settle(pending);
        }
        if (cancel) send(*child, Frame{FrameType::cancel, 0, 0, pending->id, {}});
        if (hung) kill(*child, hung_call());
    }
}

int32_t FamilyProcess::invoke(CallKind kind, std::uint32_t index, gh_call* call, std::vector<std::string> fields,
                              gh_sink* out, gh_sink* err) {
    auto pending = std::make_shared<Pending>();
    pending->call = call; // its frames are seen to on this thread, as they come (see_to)
    std::shared_ptr<Child> child;
    std::uint64_t id;
    std::string down;
    {
        std::lock_guard lock(mutex_);
        child = child_;
        id = next_id_++;
        if (!child) down = last_crash_;
    }
    if (!child) return crashed(out, err, down.empty() ? "its process ended" : down, false);
    {
        std::lock_guard lock(child->mutex);
        if (child->gone) return crashed(out, err, "its process has just ended", false);
        child->pending.emplace(id, pending);
    }
    Frame frame = call_frame(kind, index, id, std::move(fields), call);
    if (frame.length() > kMaxFrameBytes) {
        {
            std::lock_guard lock(child->mutex);
            child->pending.erase(id);
        }
        if (gh_sink* said = err ? err : out) said->bytes = too_large_for_a_frame(frame.length());
        return GH_STATUS_INVALID_ARGS;
    }
    send(*child, std::move(frame)); // a child that takes nothing is killed: the wait below ends

    const gh_host_api* api = plugins::host_api();
    // A command is a person's maintenance verb; it may take as long as it takes.
    const bool bounded = kind != CallKind::command;
    const auto deadline = Clock::now() + options_.call_deadline + options_.kill_grace;
    bool cancel_sent = false, killed = false;
    auto forget = [&] {
        std::lock_guard lock(child->mutex);
        child->pending.erase(id);
    };
    const auto ready = [&] {
        std::lock_guard lock(pending->mutex);
        return !pending->frames.empty() || pending->gone;
    };
    // Progress is coalesced past the child's budget: see_to holds the latest
    // report until there is room, and it is published before the answer
    // whatever the budget says (`last`), for it is what the client should
    // see last.
    const auto tell_held_progress = [&](bool last) {
        std::optional<Frame> held;
        {
            std::lock_guard lock(pending->mutex);
            if (!pending->progress_held || !(last || child->progress.take())) return;
            held = std::move(pending->progress_held);
            pending->progress_held.reset();
        }
        publish_progress(call, *held);
    };
    for (;;) {
        std::deque<Frame> frames;
        bool gone;
        std::string why;
        // This thread reads its own answer when no other does, else waits
        // for the one that reads to hand it over.
        bool read = false;
        if (!ready()) {
            std::size_t waiting;
            {
                std::lock_guard lock(child->mutex);
                waiting = child->pending.size();
            }
            read = child->reading->read_here(Clock::now() + kPoll, ready, waiting == 1);
            if (read) {
                std::lock_guard lock(child->mutex);
                waiting = child->pending.size();
            }
            if (read && waiting > 1) child->reading->read_on();
        }
        {
            std::unique_lock lock(pending->mutex);
            if (!read)
                pending->arrived.wait_for(lock, kPoll, [&] { return !pending->frames.empty() || pending->gone; });
            frames.swap(pending->frames);
            pending->frame_bytes = 0;
            gone = pending->gone;
            why = pending->why;
        }
        for (const auto& frame : frames) {
            if (frame.type != FrameType::result) {
                see_to(*child, *pending, frame);
                continue;
            }
            tell_held_progress(true);
            forget();
            if (out) out->bytes.append(frame.field(0));
            if (err) err->bytes.append(frame.field(1));
            return frame.code;
        }
        tell_held_progress(gone);
        if (gone) return crashed(out, err, why, true);
        if (!cancel_sent && call && api->is_cancelled(call)) {
            cancel_sent = true;
            send(*child, Frame{FrameType::cancel, 0, 0, id, {}});
        }
        if (bounded && !killed && Clock::now() >= deadline) {
            killed = true;
            kill(*child, hung_call());
        }
    }
}

} // namespace gatehouse::isolation
