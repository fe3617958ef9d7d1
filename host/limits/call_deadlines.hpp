#pragma once

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace gatehouse::limits {

// One thread that runs an action when its deadline passes, unless the action
// was withdrawn first: the tool call timeout. The action runs on this thread
// without the lock held, so it may take its time; it may also race with the
// withdrawal (the caller's own answer-once flag settles that race).
class CallDeadlines {
public:
    using Clock = std::chrono::steady_clock;
    // A deadline and the number that tells it from others at the same time;
    // deadlines are ordered by both, so one tree holds them.
    struct Ticket {
        Clock::time_point deadline;
        std::uint64_t number = 0;
        auto operator<=>(const Ticket&) const = default;
    };

    CallDeadlines();
    ~CallDeadlines(); // withdraws whatever is left, without running it
    CallDeadlines(const CallDeadlines&) = delete;
    CallDeadlines& operator=(const CallDeadlines&) = delete;

    Ticket schedule(Clock::time_point deadline, std::function<void()> action);
    void withdraw(const Ticket& ticket);

    std::size_t pending() const;

private:
    void run();

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::map<Ticket, std::function<void()>> actions_; // soonest first
    std::uint64_t next_ = 1;
    bool stopping_ = false;
    // When the thread is asleep, the time it will wake by itself (max: only
    // when told); min while it is awake. A new deadline wakes it only when it
    // is earlier, so a steady run of calls, each withdrawn before its
    // deadline, costs no wake-up at all.
    Clock::time_point wakes_at_ = Clock::time_point::min();
    std::thread thread_; // started by the first schedule()
};

} // namespace gatehouse::limits
