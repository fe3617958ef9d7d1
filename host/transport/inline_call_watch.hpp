#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace gatehouse::transport {

// Lets the stdio reader run a quick tool's call itself (no hand-off, no
// wake-up) without ever holding stdin for long: when one such call is still
// running a tick after the watch first saw it, the watch takes the reading
// away from it and hands it on (take_over), so ping, cancellations and other
// calls are read again within one to two ticks. The call itself runs on and
// answers as usual; only its thread no longer reads afterwards.
//
// Costs per call: two atomic stores and a load. The watch's thread ticks only
// while calls are being run this way and sleeps, untimed, otherwise.
class InlineCallWatch {
public:
    InlineCallWatch(std::chrono::microseconds tick, std::function<void()> take_over);
    ~InlineCallWatch(); // stop()
    InlineCallWatch(const InlineCallWatch&) = delete;
    InlineCallWatch& operator=(const InlineCallWatch&) = delete;

    // Whether calls may be run this way: the watch's thread runs (it starts
    // on the first ask; false when the system refuses it, or after stop).
    // Called by the reader of the moment.
    bool ready();
    // The reader of the moment is about to run a call itself (after ready()).
    std::uint64_t begin();
    // The call begun with `token` returned. True when its thread still holds
    // the reading; false when the watch took it over meanwhile.
    bool end(std::uint64_t token);

    // Ends the thread; no take-over happens afterwards. begin and end stay
    // safe to call (nothing watches them any more).
    void stop();

private:
    void run();

    const std::chrono::microseconds tick_;
    const std::function<void()> take_over_;
    // 2 * the last call's number, plus 1 while it runs.
    std::atomic<std::uint64_t> state_{0};
    // Touched by the reader of the moment only; the hand-over of the reading
    // orders one reader's last use before the next one's first.
    std::uint64_t calls_ = 0;
    // The thread sleeps untimed: nothing was run inline for a whole tick.
    std::atomic<bool> parked_{false};
    std::atomic<bool> watching_{false}; // the thread runs and stop() has not been called
    std::mutex mutex_;
    std::condition_variable changed_;
    bool stopping_ = false;
    std::thread thread_; // started by the first begin()
};

} // namespace gatehouse::transport
