#pragma once

#include "isolation/frame_channel.hpp"
#include "isolation/wire_descriptor.hpp"
#include "plugins/remote_family.hpp"

#include <gatehouse/plugin.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gatehouse::isolation {

// The bounds a family's child runs within (its plugins entry: memory_mb,
// cpu_seconds, open_files). Unset: the host's own.
struct ProcessLimits {
    std::optional<std::uint64_t> memory_mb;   // address space (RLIMIT_AS)
    std::optional<std::uint64_t> cpu_seconds; // CPU time (RLIMIT_CPU), summed over the child's life
    std::optional<std::uint64_t> open_files;  // RLIMIT_NOFILE
};

struct FamilyProcessOptions {
    std::filesystem::path library;
    ProcessLimits limits;
    // The host's environment variables the child sees besides the basic
    // ones (basic_environment); unset, all of them.
    std::optional<std::vector<std::string>> environment;
    // A call the child has not answered this long after its tool timeout
    // is hung: the child is killed and started again.
    std::chrono::milliseconds call_deadline{120000};
    std::chrono::milliseconds kill_grace{5000};
    // How long the child may take to load the library, and to run init.
    std::chrono::milliseconds load_timeout{10000};
    std::chrono::milliseconds init_timeout{120000};
    // A child that has not taken a frame the host sends it whole this long
    // after its send began is killed: a send to it never holds a call, or the
    // frames behind it, for ever, however the child drains it a little now
    // and then.
    std::chrono::seconds send_stall{5};
};

// One family served from a child process: the same binary's `serve-family`
// verb loads the library there and answers frames on a pair of pipes. Every
// call the host makes through the proxy descriptor becomes a call frame;
// the host functions the plugin calls back come back as frames, and the
// calling thread runs them with its own gh_call, as it would in process.
//
// When the child dies (a signal, an exit, killed for a hung call or a
// broken frame), every call in flight answers FAMILY_CRASHED, the host
// logs why, and the child is started again after a backoff that doubles
// with each crash in a row (100 ms to 30 s; a child that lived 30 s
// resets it). A restarted child must offer the very descriptor the first
// one did; its init runs again with the same configuration.
class FamilyProcess final : public ProxiedCalls, public plugins::RemoteFamily {
public:
    // Starts the child and reads its descriptor. Throws std::runtime_error
    // with the sentence the load report shows when it cannot.
    explicit FamilyProcess(FamilyProcessOptions options);
    ~FamilyProcess() override;
    FamilyProcess(const FamilyProcess&) = delete;
    FamilyProcess& operator=(const FamilyProcess&) = delete;

    // The descriptor to check and serve: every function forwards here.
    const gh_plugin_desc* descriptor() const { return proxy_->descriptor(); }
    // Runs the plugin's init in the child; false with the plugin's sentence.
    // From here on a child that dies is started again.
    bool init(const std::string& config_json, std::string& error) override;
    // The proxied functions find their process through the plugin state.
    void* plugin_state() override { return static_cast<ProxiedCalls*>(this); }

    int32_t invoke(CallKind kind, std::uint32_t index, gh_call* call, std::vector<std::string> fields, gh_sink* out,
                   gh_sink* err) override;

    // A tool call sent now, and answered on the thread that reads the
    // child's frames: the host functions it calls back run `elsewhere`, in
    // order; the supervisor sends its cancellation and kills a child that
    // outlives its deadline, as a waiting call's thread would.
    bool answers_later() const override { return true; }
    void begin_tool_call(void* tool_data, gh_call* call, std::string arguments, Answered answered,
                         Elsewhere elsewhere) override;
    bool on_own_thread() const override;

    const std::string& family() const { return family_; }
    bool serving() const;
    std::uint64_t crashes() const { return crashes_.load(); }

    struct Child;
    struct Pending;

private:
    FamilyProcessOptions options_;
    std::string family_ = "plugin";
    std::string descriptor_bytes_;
    std::unique_ptr<ProxyDescriptor> proxy_;
    std::string init_config_;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::shared_ptr<Child> child_;                // null while down
    std::vector<std::shared_ptr<Child>> retired_; // dead, their threads to join
    std::vector<std::shared_ptr<Child>> joining_; // dead, their threads being joined by the supervisor
    std::uint64_t next_id_ = 1;
    bool stopping_ = false;
    std::atomic<bool> stop_asked_{false}; // stopping_, read without the lock by a start under way
    bool restart_wanted_ = false;
    unsigned crashes_in_a_row_ = 0;
    std::string last_crash_; // how the last child ended, for calls while none serves
    std::chrono::steady_clock::time_point next_start_{};
    std::atomic<std::uint64_t> crashes_{0};
    std::atomic<unsigned> answered_later_{0};      // calls begun and not yet answered
    std::atomic<bool> looking_after_later_{false}; // the supervisor wakes every kPoll to look after them
    std::thread supervisor_;

    std::shared_ptr<Child> spawn();
    // The next frame of `type` from a child whose reader has not started,
    // logging what comes outside any call meanwhile. Nothing, with `why`
    // set, when it breaks a frame or takes `timeout` (why: not_in_time and
    // the timeout); nothing with `why` empty when its stream ends.
    std::optional<Frame> await_frame(Child& child, FrameType type, std::chrono::milliseconds timeout,
                                     const char* not_in_time, std::string& why);
    // Kills the child and its group and waits for it: its wait status, or
    // nothing when it was reaped already. Under its mutex, so never a reused pid.
    std::optional<int> reap(Child& child);
    // A child that serves nothing (a start given up): reaped, its stream
    // ended and its threads joined. Its wait status as reap gives it.
    std::optional<int> abandon(Child& child);
    // Sends a frame to a child whose reader runs; kills a child that has not
    // taken it whole within options.send_stall. False when it was not sent.
    bool send(Child& child, Frame frame);
    // After a crash or a failed start (mutex_ held): the next start, after a
    // backoff that doubles with each in a row up to 30 s.
    std::chrono::milliseconds schedule_restart();
    // Reads the child's descriptor frame; throws std::runtime_error.
    std::string read_descriptor(Child& child);
    bool run_init(Child& child, std::string& error);
    // Delivers the whole frames already read and not yet taken: what the
    // child wrote right behind init's result can come in the same read, and
    // no poll reports bytes already read. False, with `why`, on a broken frame.
    bool deliver_buffered(Child& child, std::string& why);
    void start_reading(const std::shared_ptr<Child>& child);
    // The child's reader thread: it reads while no call waits, so what the
    // plugin says outside any call is heard, and gives the reading up to a
    // call that waits alone (transport::SharedReading).
    void read_frames(std::shared_ptr<Child> child);
    // One read of what the child wrote, each whole frame handed to its call;
    // false at the stream's end or a broken frame (the child is killed).
    bool read_available(Child& child);
    void deliver(Child& child, Frame frame);
    void child_gone(const std::shared_ptr<Child>& child, const std::string& why);
    void supervise();
    void kill(Child& child, const std::string& reason);
    // FAMILY_CRASHED for a call the child died serving (reached), or one
    // that came while no child serves.
    int32_t crashed(gh_sink* out, gh_sink* err, const std::string& why, bool reached) const;
    void run_host_call(gh_call* call, Child& child, const Frame& frame);
    // Why a child is killed for a call past its deadline and the grace after it.
    std::string hung_call() const;
    // A frame of a call answered later, on the reading thread.
    void deliver_later(Child& child, const std::shared_ptr<Pending>& pending, Frame frame);
    // One frame of such a call besides its result: a host call, a log line,
    // progress, a change.
    void see_to(Child& child, Pending& pending, const Frame& frame);
    // The frames it queued, one after another (here, or on a worker when the
    // first is a host call), then the answer if it came meanwhile.
    void see_to_frames(const std::shared_ptr<Pending>& pending);
    // Answers a call answered later once its result (or its child's end)
    // has come and none of its host calls runs; once.
    void settle(const std::shared_ptr<Pending>& pending);
    // The supervisor's look at them: cancellations to send, a call past its
    // deadline and grace (its child is killed).
    void look_after_later_calls();
};

} // namespace gatehouse::isolation
