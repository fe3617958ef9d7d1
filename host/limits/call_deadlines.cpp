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
    Ticket ticket;
    bool earliest;
    {
        std::lock_guard lock(mutex_);
        // The thread starts with the first deadline: a host that is only
        // asked to list its tools never needs it.
        if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { run(); });
        ticket = next_++;
        actions_.emplace(ticket, std::make_pair(deadline, std::move(action)));
        earliest = deadline < wakes_at_;
        order_.emplace(deadline, ticket);
    }
    if (earliest) changed_.notify_all();
    return ticket;
}

void CallDeadlines::withdraw(Ticket ticket) {
    std::function<void()> dropped; // destroyed without the lock: it may hold the last reference to a connection
    std::lock_guard lock(mutex_);
    auto it = actions_.find(ticket);
    if (it == actions_.end()) return;
    auto [first, last] = order_.equal_range(it->second.first);
    for (auto o = first; o != last; ++o)
        if (o->second == ticket) {
            order_.erase(o);
            break;
        }
    dropped = std::move(it->second.second);
    actions_.erase(it);
}

std::size_t CallDeadlines::pending() const {
    std::lock_guard lock(mutex_);
    return actions_.size();
}

void CallDeadlines::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        if (order_.empty()) {
            wakes_at_ = Clock::time_point::max();
            changed_.wait(lock);
            wakes_at_ = Clock::time_point::min();
            continue;
        }
        const auto deadline = order_.begin()->first;
        if (Clock::now() < deadline) {
            wakes_at_ = deadline;
            changed_.wait_until(lock, deadline);
            wakes_at_ = Clock::time_point::min();
            continue;
        }
        const Ticket ticket = order_.begin()->second;
        order_.erase(order_.begin());
        auto it = actions_.find(ticket);
        auto action = std::move(it->second.second);
        actions_.erase(it);
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
