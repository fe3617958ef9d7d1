#pragma once

#include "limits/sized_thread.hpp"
#include "protocol/connection.hpp"
#include "tasks/task_store.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gatehouse::tasks {

// Why a round was told to stop (RoundControl::why).
// released: the task is no longer this instance's to run (its record
// expired, ended, or another instance holds it); nothing of the round is kept.
enum class StopReason { none, client, deadline, host_stopping, unauthorised, released };

// What a running round reads besides its record: its cancellation (what the
// plugin's is_cancelled answers) and why it was cancelled.
struct RoundControl {
    std::shared_ptr<protocol::InFlight> in_flight = std::make_shared<protocol::InFlight>();
    std::atomic<StopReason> why{StopReason::none};
    // Asked at every lease renewal while the round runs: the gate's refusal
    // when the caller may no longer run the tool (its session ended, a
    // grant was withdrawn), else nothing. Unset: never asked.
    std::function<std::optional<Json>()> authorised;
    // What `authorised` refused with (StopReason::unauthorised); read once the round ended.
    Json refusal;
    std::mutex refusal_mutex; // guards authorised and refusal
};

// Runs the rounds of tasks on threads of its own (tasks.workers; the worker
// pool stays for calls), and keeps every task it holds alive in the store:
// it renews their leases (so another instance can tell a task whose host
// died), cancels a round that outlives tasks.max_run_ms, and cancels a round
// when any instance publishes its cancellation. One per host. Thread-safe.
class TaskRunner {
public:
    using Round = std::function<void(RoundControl&)>;

    // stack_bytes: each round's thread's stack (0: the system default); a
    // round validates its result as a call does, so it needs the stack the
    // pool's workers get (limits::worker_stack_bytes).
    TaskRunner(TaskStore& store, std::string instance, std::size_t stack_bytes = 0);
    ~TaskRunner();

    // This host's name in the records it runs (random per process).
    const std::string& instance() const { return instance_; }
    // Until when a record this host runs is its own.
    std::int64_t lease_until() const;

    // Queues a round of task `id` of `owner` (its principal's owner key),
    // whose record already names this instance as its runner. False when
    // the runner is stopping. Rounds start in turn among owners: the next
    // is the oldest of an owner with the fewest rounds running, and one
    // owner's rounds take at most all workers but one (kept for the others'
    // rounds, which would otherwise wait behind long ones up to
    // tasks.max_run_ms).
    bool run(const std::string& id, const std::string& owner, Round round);

    // Cancels the round of `id` held here; false when none is.
    bool cancel(const std::string& id, StopReason why);

    // Stops taking rounds and cancels those running; waits up to `grace`.
    // The records of rounds still held then are failed with the reason. True
    // when every thread ended.
    bool stop(std::chrono::milliseconds grace);

    std::size_t held();

private:
    struct Held {
        std::shared_ptr<RoundControl> control = std::make_shared<RoundControl>();
        std::string owner;
        Round round;
        std::int64_t started_ms = 0; // 0: queued
        std::int64_t renewed_ms = 0;
    };

    // Cancels one round, saying why (the first reason given stands).
    static void stop(RoundControl& control, StopReason why);
    void start_threads(); // under mutex_
    // Under mutex_: where in queue_ the next round to start is (see run), or
    // queue_.end() when every queued round's owner is at its share.
    std::deque<std::string>::iterator next_round();
    void work();
    void watch();
    void renew(const std::string& id, const std::shared_ptr<RoundControl>& control);

    TaskStore& store_;
    const std::string instance_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable watcher_wake_;
    std::deque<std::string> queue_;
    std::map<std::string, Held> held_;
    std::map<std::string, unsigned> running_by_owner_; // rounds started and not yet ended
    bool stopping_ = false;
    bool abandoned_ = false; // the destructor lets the watcher go whatever still runs
    std::uint64_t bus_token_ = 0;
    const std::size_t stack_bytes_;
    std::vector<limits::SizedThread> workers_;
    std::thread watcher_;
};

} // namespace gatehouse::tasks
