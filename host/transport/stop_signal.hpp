#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gatehouse::transport {

// SIGTERM and SIGINT turned into callbacks, so every transport shuts down the
// same way however many run at once; SIGHUP into `on_reload` when one is
// given, run on a thread of its own (SIGHUPs that come meanwhile make one
// more run after it), so a stop is heard while a re-read waits on a server. Construct it before any other thread
// starts: it blocks those signals in the constructing thread, every thread started afterwards inherits that, and one
// thread of its own waits for them (on a signalfd, so it sleeps until a signal comes or the object goes).
class StopSignal {
public:
    explicit StopSignal(std::function<void()> on_reload = {});
    ~StopSignal();
    StopSignal(const StopSignal&) = delete;
    StopSignal& operator=(const StopSignal&) = delete;

    // Runs `callback` on the waiting thread when a stop is requested (at once
    // if one already was). Callbacks must be quick and thread-safe.
    void on_stop(std::function<void()> callback);

    bool requested() const { return requested_.load(); }

    // As if a signal had arrived; used when the last transport ends by itself.
    void request();

    // As if SIGHUP had arrived: on_reload runs on the reloader's thread.
    void ask_reload();

private:
    void wait_loop();
    void stop_signal_received(int signal);
    void reload_loop();
    void reload();

    const std::function<void()> on_reload_;
    int signal_fd_ = -1;
    int wake_fd_ = -1; // written once by the destructor
    std::atomic<bool> requested_{false};
    std::atomic<bool> signalled_{false}; // a stop signal came (a second one exits at once)
    std::mutex mutex_;
    std::vector<std::function<void()>> callbacks_;
    std::thread waiter_;

    std::mutex reload_mutex_;
    std::condition_variable reload_changed_;
    bool reload_wanted_ = false;
    bool reloader_ending_ = false;
    std::thread reloader_; // started by the first SIGHUP
};

} // namespace gatehouse::transport
