#include "transport/inline_call_watch.hpp"

#include <system_error>

namespace gatehouse::transport {

InlineCallWatch::InlineCallWatch(std::chrono::microseconds tick, std::function<void()> take_over)
    : tick_(tick), take_over_(std::move(take_over)) {}

InlineCallWatch::~InlineCallWatch() {
    stop();
}

void InlineCallWatch::stop() {
    std::thread thread;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        watching_.store(false);
        thread = std::move(thread_);
    }
    changed_.notify_all();
    if (thread.joinable()) thread.join();
}

bool InlineCallWatch::ready() {
    // The thread starts with the first call run this way: a host that only
    // lists its tools, or whose tools are never quick, never needs it.
    if (watching_.load(std::memory_order_acquire)) return true;
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    try {
        thread_ = std::thread([this] { run(); });
        watching_.store(true, std::memory_order_release);
        return true;
    } catch (const std::system_error&) {
        return false; // no thread to spare: calls are not run this way
    }
}

std::uint64_t InlineCallWatch::begin() {
    const std::uint64_t token = ++calls_ * 2 + 1;
    state_.store(token);
    // Both sides use sequentially consistent order here: either the watch,
    // deciding to park, sees this call, or this load sees it parked.
    if (parked_.load()) {
        {
            std::lock_guard lock(mutex_);
            parked_.store(false);
        }
        changed_.notify_one();
    }
    return token;
}

bool InlineCallWatch::end(std::uint64_t token) {
    // The watch takes over with the same exchange: exactly one of the two wins.
    return state_.compare_exchange_strong(token, token - 1);
}

void InlineCallWatch::run() {
    std::unique_lock lock(mutex_);
    std::uint64_t seen = state_.load();
    while (!stopping_) {
        if (parked_.load()) {
            changed_.wait(lock, [this] { return !parked_.load() || stopping_; });
            seen = state_.load();
            continue;
        }
        if (changed_.wait_for(lock, tick_, [this] { return stopping_; })) break;
        const std::uint64_t now = state_.load();
        if (now != seen) {
            seen = now;
            continue;
        }
        if (now % 2 == 1) {
            // The same call has run for at least a whole tick.
            std::uint64_t expected = now;
            if (state_.compare_exchange_strong(expected, now - 1)) {
                lock.unlock();
                take_over_();
                lock.lock();
            }
            seen = state_.load();
            continue;
        }
        // Nothing was begun for a whole tick: sleep until the next begin().
        parked_.store(true);
        if (state_.load() != now) parked_.store(false);
    }
}

} // namespace gatehouse::transport
