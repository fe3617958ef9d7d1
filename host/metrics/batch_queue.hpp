#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gatehouse::metrics {

// Items handed from calls to a thread of their own, in batches (the audit
// log's lines, the spans to export). push() never waits: a full queue drops
// the item and says so. The thread delivers what waits every `pace`, or at
// once when `batch` items wait, so a call wakes it (a system call) only for
// a full batch. Thread-safe.
template <class Item> class BatchQueue {
public:
    using Deliver = std::function<void(std::vector<Item>& batch)>;

    BatchQueue(std::size_t max_queue, std::size_t batch, std::chrono::milliseconds pace, Deliver deliver)
        : max_queue_(max_queue), batch_(batch), pace_(pace), deliver_(std::move(deliver)), thread_([this] { run(); }) {}

    // Delivers what is queued, then stops.
    ~BatchQueue() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }
    BatchQueue(const BatchQueue&) = delete;
    BatchQueue& operator=(const BatchQueue&) = delete;

    // False when the queue was full and the item dropped.
    bool push(Item item) {
        bool wake = false;
        {
            std::lock_guard lock(mutex_);
            if (queue_.size() >= max_queue_) return false;
            queue_.push_back(std::move(item));
            ++pushed_;
            wake = queue_.size() == batch_;
        }
        if (wake) wake_.notify_one();
        return true;
    }

    // Waits until every item pushed so far was delivered.
    void flush() {
        std::unique_lock lock(mutex_);
        const std::uint64_t target = pushed_;
        now_ = true;
        wake_.notify_one();
        delivered_.wait(lock, [&] { return settled_ >= target; });
    }

    // Runs a delivery now, even of nothing (a reopened file waits for no line).
    void poke() {
        {
            std::lock_guard lock(mutex_);
            now_ = true;
        }
        wake_.notify_one();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait_for(lock, pace_, [&] { return stopping_ || now_ || queue_.size() >= batch_; });
            now_ = false;
            if (queue_.empty() && stopping_) return;
            std::vector<Item> batch;
            const std::size_t n = std::min(queue_.size(), batch_);
            batch.reserve(n);
            for (std::size_t i = 0; i < n; ++i) {
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            if (!queue_.empty()) now_ = true; // the rest goes at once
            lock.unlock();
            deliver_(batch);
            lock.lock();
            settled_ += n;
            delivered_.notify_all();
        }
    }

    const std::size_t max_queue_;
    const std::size_t batch_;
    const std::chrono::milliseconds pace_;
    Deliver deliver_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable delivered_;
    std::deque<Item> queue_;
    std::uint64_t pushed_ = 0;
    std::uint64_t settled_ = 0;
    bool now_ = false;
    bool stopping_ = false;
    std::thread thread_; // last: it starts once everything it reads is built
};

} // namespace gatehouse::metrics
