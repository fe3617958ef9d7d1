#include "limits/call_deadlines.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::limits {

CallDeadlines::CallDeadlines() = default;

CallDeadlines::~CallDeadlines() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

CallDeadlines::Ticket CallDeadlines::schedule(Clock::time_point deadline, std::function<void()> action) {
    bool earliest;
    Ticket ticket{deadline};
    {
        std::lock_guard lock(mutex_);
        // The thread starts with the first deadline: a host that is only
        // asked to list its tools never needs it.
        if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { run(); });
        ticket.number = next_++;
        // Calls of one timeout end in the order they began: the hint makes
        // the usual insertion, at the end, cost no search.
        actions_.emplace_hint(actions_.end(), ticket, std::move(action));
        earliest = deadline < wakes_at_;
    }
    if (earliest) changed_.notify_all();
    return ticket;
}

void CallDeadlines::withdraw(const Ticket& ticket) {
    std::function<void()> dropped; // destroyed without the lock: it may hold the last reference to a connection
    std::lock_guard lock(mutex_);
    auto it = actions_.find(ticket);
    if (it == actions_.end()) return;
    dropped = std::move(it->second);
    actions_.erase(it);
}

std::size_t CallDeadlines::pending() const {
    std::lock_guard lock(mutex_);
    return actions_.size();
}

void CallDeadlines::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        if (actions_.empty()) {
            wakes_at_ = Clock::time_point::max();
            changed_.wait(lock);
            wakes_at_ = Clock::time_point::min();
            continue;
        }
        const auto deadline = actions_.begin()->first.deadline;
        if (Clock::now() < deadline) {
            wakes_at_ = deadline;
            changed_.wait_until(lock, deadline);
            wakes_at_ = Clock::time_point::min();
            continue;
        }
        auto action = std::move(actions_.begin()->second);
        actions_.erase(actions_.begin());
        lock.unlock();
        try {
            action();
        } catch (const std::exception& e) {
            spdlog::error("a call deadline's action failed: {}", e.what());
        } catch (...) {
            spdlog::error("a call deadline's action failed");
        }
        action = nullptr; // released before the lock is taken again
        lock.lock();
    }
}

} // namespace gatehouse::limits
