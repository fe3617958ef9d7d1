#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <vector>

namespace gatehouse::protocol {

// Up to a fixed number of worker threads running requests that may take long
// (tool calls), so the reader stays free for ping, tools/list and
// cancellations. A worker starts when a job finds none free and stays until
// stop(): starting all of them up front was a millisecond and a half of every
// host's start-up, before it could answer anything.
class RequestPool {
public:
    // workers: the most threads it runs (0 counts as 1). stack_bytes: each
    // worker's stack (0: the system default). JSON Schema validation runs
    // here, and std::regex needs stack in proportion to the string it
    // matches (see limits::worker_stack_bytes).
    explicit RequestPool(unsigned workers, std::size_t stack_bytes = 0);
    std::size_t stack_bytes() const { return stack_bytes_; }
    ~RequestPool(); // stop(): waits for every worker, however long
    RequestPool(const RequestPool&) = delete;
    RequestPool& operator=(const RequestPool&) = delete;

    void submit(std::function<void()> job);

    // Queues the job only when a worker is free to take it now (idle and not
    // already owed a queued job); false, and the job untouched, otherwise.
    bool submit_if_idle(std::function<void()>& job);

    // Whether a worker is free now, as submit_if_idle decides it.
    bool has_free_worker() const;

    // Queues the job ahead of every queued one: the next worker free runs it.
    void submit_first(std::function<void()> job);

    // For a job's last act: called on one of this pool's workers, runs `job`
    // on that worker as soon as the job it is running returns, before it
    // looks at the queue, so the next job starts without waking another
    // worker (a system call and two context switches) while this one goes
    // to sleep. Anywhere else (or when this worker has one such job
    // already), the same as submit.
    void submit_next(std::function<void()> job);
    // A job that goes on after what called submit_next (the stdio reader,
    // which ran a call in place and reads on) hands the job it was left to
    // the queue, as submit would have.
    void release_next();

    // Finishes queued jobs, then joins the workers.
    void stop();

    // The same, waiting at most `grace` for the last job to return. False when
    // a worker is still inside a job (a plugin that ignores cancellation): its
    // thread is left running, and the process can only end with std::_Exit,
    // since unloading the plugin under it would crash.
    bool stop(std::chrono::milliseconds grace);

    // Every worker has been joined.
    bool stopped() const;

    // Workers started so far.
    unsigned threads() const;

private:
    static void* thread_main(void* pool);
    // Starts one more worker, counted as searching. With the lock held; the
    // error number when the system refuses a thread, else 0.
    int start_worker();
    // Queues the job and wakes a sleeping worker when the awake ones cannot
    // take it; releases the lock before the wake-up.
    void enqueue(std::function<void()> job, std::unique_lock<std::mutex>& lock, bool first = false);
    bool free_worker_locked() const;
    void run();

    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::condition_variable finished_;
    std::deque<std::function<void()>> jobs_;
    const unsigned max_workers_;
    const std::size_t stack_bytes_;
    std::vector<pthread_t> threads_;
    unsigned running_ = 0; // workers not yet returned from run()
    // A submit wakes a sleeping worker only when the workers already awake
    // and looking for work (done with a job, or woken for one) are fewer than
    // the queued jobs: under load a worker that finishes a job takes the next
    // without a wake-up, which is a system call and two context switches.
    unsigned sleeping_ = 0;  // waiting on ready_, not yet handed a wake-up
    unsigned searching_ = 0; // awake, between jobs
    unsigned wake_ups_ = 0;  // handed out by submit, not yet taken by a worker
    bool stopping_ = false;
};

} // namespace gatehouse::protocol
