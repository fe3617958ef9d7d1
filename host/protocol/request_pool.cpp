#include "protocol/request_pool.hpp"

#include <spdlog/spdlog.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace gatehouse::protocol {

namespace {

// Which pool this thread is a worker of, and the job its current job left
// it to run next (submit_next). Each thread's own, whatever host it serves.
struct ThisWorker {
    RequestPool* pool = nullptr;
    std::function<void()> next;
};
thread_local ThisWorker t_this_worker;

} // namespace

RequestPool::RequestPool(unsigned workers, std::size_t stack_bytes)
    : max_workers_(workers == 0 ? 1 : workers), stack_bytes_(stack_bytes) {
    // Checked now, so a stack the system refuses stops the host at start,
    // not at its first call.
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    const bool accepted = stack_bytes == 0 || pthread_attr_setstacksize(&attributes, stack_bytes) == 0;
    pthread_attr_destroy(&attributes);
    if (!accepted)
        throw std::runtime_error("cannot give worker threads a stack of " + std::to_string(stack_bytes) + " bytes");
    threads_.reserve(max_workers_);
}

int RequestPool::start_worker() {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    if (stack_bytes_ > 0) pthread_attr_setstacksize(&attributes, stack_bytes_);
    pthread_t thread;
    const int error = pthread_create(&thread, &attributes, &RequestPool::thread_main, this);
    pthread_attr_destroy(&attributes);
    if (error != 0) return error;
    threads_.push_back(thread);
    ++running_;
    ++searching_; // it looks for work from its first moment
    return 0;
}

unsigned RequestPool::threads() const {
    std::lock_guard lock(mutex_);
    return static_cast<unsigned>(threads_.size());
}

RequestPool::~RequestPool() {
    stop();
}

bool RequestPool::free_worker_locked() const {
    // A worker not yet started counts as free: enqueue starts it.
    return !stopping_ && (searching_ + sleeping_ > jobs_.size() || threads_.size() < max_workers_);
}

bool RequestPool::submit_if_idle(std::function<void()>& job) {
    std::unique_lock lock(mutex_);
    if (!free_worker_locked()) return false;
    enqueue(std::move(job), lock);
    return true;
}

bool RequestPool::has_free_worker() const {
    std::lock_guard lock(mutex_);
    return free_worker_locked();
}

void RequestPool::submit_first(std::function<void()> job) {
    std::unique_lock lock(mutex_);
    enqueue(std::move(job), lock, true);
}

void RequestPool::enqueue(std::function<void()> job, std::unique_lock<std::mutex>& lock, bool first) {
    if (first)
        jobs_.push_front(std::move(job));
    else
        jobs_.push_back(std::move(job));
    const bool wake = jobs_.size() > searching_ && sleeping_ > 0;
    if (wake) {
        --sleeping_;
        ++searching_;
        ++wake_ups_;
    } else if (jobs_.size() > searching_ && !stopping_ && threads_.size() < max_workers_) {
        // Refused with none running, the job could never run: say so. With
        // some running, one of them takes it when done.
        if (const int error = start_worker(); error != 0 && threads_.empty()) {
            if (first)
                jobs_.pop_front();
            else
                jobs_.pop_back();
            throw std::runtime_error(std::string("cannot start a worker thread: ") + std::strerror(error));
        }
    }
    lock.unlock();
    if (wake) ready_.notify_one();
}

void RequestPool::submit(std::function<void()> job) {
    std::unique_lock lock(mutex_);
    enqueue(std::move(job), lock);
}

void RequestPool::submit_next(std::function<void()> job) {
    if (t_this_worker.pool == this && !t_this_worker.next) {
        t_this_worker.next = std::move(job);
        return;
    }
    submit(std::move(job));
}

void RequestPool::release_next() {
    if (t_this_worker.pool != this || !t_this_worker.next) return;
    submit(std::exchange(t_this_worker.next, nullptr));
}

void RequestPool::stop() {
    std::vector<pthread_t> threads;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true; // no worker starts after this
        threads = threads_;
    }
    ready_.notify_all();
    for (auto t : threads)
        pthread_join(t, nullptr);
    std::lock_guard lock(mutex_);
    threads_.clear();
}

bool RequestPool::stop(std::chrono::milliseconds grace) {
    {
        std::unique_lock lock(mutex_);
        stopping_ = true;
        ready_.notify_all();
        if (!finished_.wait_for(lock, grace, [this] { return running_ == 0; })) return false;
    }
    stop();
    return true;
}

bool RequestPool::stopped() const {
    std::lock_guard lock(mutex_);
    return stopping_ && running_ == 0 && threads_.empty();
}

void* RequestPool::thread_main(void* pool) {
    static_cast<RequestPool*>(pool)->run();
    return nullptr;
}

namespace {

// A job that throws has lost what it was doing (its answer, if it had one),
// and that is a fault to fix where it threw; the worker, and with it the
// host and every other caller, lives on.
void run_job(const std::function<void()>& job) {
    try {
        job();
    } catch (const std::exception& e) {
        spdlog::error("a request's work failed and was abandoned: {}", e.what());
    } catch (...) {
        spdlog::error("a request's work failed and was abandoned");
    }
}

} // namespace

void RequestPool::run() {
    t_this_worker.pool = this;
    std::unique_lock lock(mutex_); // start_worker counted this worker as searching
    for (;;) {
        if (!jobs_.empty()) {
            auto job = std::move(jobs_.front());
            jobs_.pop_front();
            --searching_;
            lock.unlock();
            // The job, then each one it left this worker (submit_next); each
            // released outside the lock, as it may own much.
            do {
                run_job(job);
                job = std::exchange(t_this_worker.next, nullptr);
            } while (job);
            lock.lock();
            ++searching_;
            continue;
        }
        if (stopping_) {
            --searching_;
            if (--running_ == 0) finished_.notify_all();
            return;
        }
        --searching_;
        ++sleeping_;
        ready_.wait(lock, [this] { return wake_ups_ > 0 || stopping_; });
        if (wake_ups_ > 0) {
            --wake_ups_; // submit already counted this worker as searching
        } else {
            --sleeping_; // woken to stop
            ++searching_;
        }
    }
}

} // namespace gatehouse::protocol
