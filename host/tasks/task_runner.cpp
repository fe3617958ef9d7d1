#include "tasks/task_runner.hpp"

#include "crypto/bytes.hpp"
#include "crypto/random_bytes.hpp"
#include "gate/refusal.hpp"
#include "protocol/call_outcome.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::tasks {

namespace {

constexpr auto kWatchTick = std::chrono::milliseconds(200);

} // namespace

TaskRunner::TaskRunner(TaskStore& store, std::string instance, std::size_t stack_bytes)
    : store_(store), instance_(instance.empty() ? crypto::hex(crypto::random_bytes(6)) : std::move(instance)),
      stack_bytes_(stack_bytes) {
    // A cancellation published by any instance reaches the round held here.
    bus_token_ = store_.bus().subscribe([this](const state::Change& change) {
        if (change.kind == state::Change::Kind::task_cancel) cancel(change.uri, StopReason::client);
    });
}

// The threads start with the first round: a host that never runs a task
// pays for none of them.
void TaskRunner::start_threads() {
    if (!workers_.empty()) return;
    const unsigned workers = store_.settings().workers;
    for (unsigned i = 0; i < workers; ++i)
        workers_.emplace_back(stack_bytes_, [this] { work(); });
    watcher_ = std::thread([this] { watch(); });
}

TaskRunner::~TaskRunner() {
    store_.bus().unsubscribe(bus_token_);
    if (!stop(std::chrono::seconds(5))) {
        // A plugin ignores its cancellation: the host ends the process
        // rather than wait (Host::stop_workers); its threads are let go.
        spdlog::error("task rounds still running at shutdown; their threads are abandoned");
        for (auto& t : workers_)
            if (t.joinable()) t.detach();
    }
    {
        std::lock_guard lock(mutex_);
        abandoned_ = true;
    }
    watcher_wake_.notify_all();
    if (watcher_.joinable()) watcher_.join();
}

std::int64_t TaskRunner::lease_until() const {
    return now_ms() + static_cast<std::int64_t>(store_.settings().lease_ms);
}

bool TaskRunner::run(const std::string& id, const std::string& owner, Round round) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return false;
        start_threads();
        // A control of its own for every round: the previous round of the
        // same task may still be writing its outcome, and its end must not
        // take this round's entry with it (work() erases by control).
        Held& h = held_.insert_or_assign(id, Held{}).first->second;
        h.owner = owner;
        h.round = std::move(round);
        h.renewed_ms = now_ms();
        queue_.push_back(id);
    }
    wake_.notify_one();
    watcher_wake_.notify_all();
    return true;
}

bool TaskRunner::cancel(const std::string& id, StopReason why) {
    std::shared_ptr<RoundControl> control;
    {
        std::lock_guard lock(mutex_);
        auto it = held_.find(id);
        if (it == held_.end()) return false;
        control = it->second.control;
    }
    stop(*control, why);
    return true;
}

void TaskRunner::stop(RoundControl& control, StopReason why) {
    StopReason none = StopReason::none;
    control.why.compare_exchange_strong(none, why);
    control.in_flight->cancel();
}

std::size_t TaskRunner::held() {
    std::lock_guard lock(mutex_);
    return held_.size();
}

std::deque<std::string>::iterator TaskRunner::next_round() {
    const unsigned workers = store_.settings().workers;
    const unsigned share = workers > 1 ? workers - 1 : 1;
    auto next = queue_.end();
    unsigned fewest = share; // an owner running this many already waits
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        const auto held = held_.find(*it);
        if (held == held_.end()) return it; // nothing left to run: dropped at once
        const auto found = running_by_owner_.find(held->second.owner);
        const unsigned running = found == running_by_owner_.end() ? 0 : found->second;
        if (running >= fewest) continue;
        next = it;
        fewest = running;
        if (running == 0) break;
    }
    return next;
}

void TaskRunner::work() {
    for (;;) {
        std::string id;
        std::string owner;
        Round round;
        std::shared_ptr<RoundControl> control;
        {
            std::unique_lock lock(mutex_);
            auto next = queue_.end();
            wake_.wait(lock, [&] {
                if (queue_.empty()) return stopping_;
                // Stopping, each round is started only to be stopped at once.
                next = stopping_ ? queue_.begin() : next_round();
                return next != queue_.end();
            });
            if (queue_.empty()) return; // stopping, nothing left to start
            id = std::move(*next);
            queue_.erase(next);
            auto it = held_.find(id);
            if (it == held_.end()) continue;
            it->second.started_ms = now_ms();
            owner = it->second.owner;
            ++running_by_owner_[owner];
            round = std::move(it->second.round);
            control = it->second.control;
            if (stopping_) stop(*control, StopReason::host_stopping);
        }
        try {
            round(*control);
        } catch (const std::exception& e) {
            spdlog::error("task {}: its round failed: {}", id, e.what());
        }
        {
            // The task's next round may be held under the same id already
            // (its input came while this one was writing its outcome).
            std::lock_guard lock(mutex_);
            if (auto it = held_.find(id); it != held_.end() && it->second.control == control) held_.erase(it);
            if (auto running = running_by_owner_.find(owner);
                running != running_by_owner_.end() && --running->second == 0)
                running_by_owner_.erase(running);
        }
        // A round of an owner that was at its share may start now.
        wake_.notify_all();
        watcher_wake_.notify_all();
    }
}

namespace {

// A refusal that says nothing of the caller's rights: the state backend did
// not answer the gate. The next renewal asks again; a task is not ended
// for a moment of Redis.
bool transient(const Json& refusal) {
    return protocol::result_verdict(refusal, false).code == gate::refusal_code::state_unavailable;
}

} // namespace

// A renewal also reads the record: a cancellation whose message this
// instance missed is seen here at the latest.
void TaskRunner::renew(const std::string& id, const std::shared_ptr<RoundControl>& control) {
    bool cancel_requested = false;
    bool ours = true; // unknown (the backend did not answer) counts as ours
    try {
        const auto after = store_.update(
            id,
            [&](TaskRecord& r) {
                if (r.status != Status::working || r.runner != instance_) return false;
                cancel_requested = r.cancel_requested;
                r.lease_until_ms = lease_until();
                return true;
            },
            false);
        ours = after && after->status == Status::working && after->runner == instance_;
    } catch (const state::BackendError& e) {
        spdlog::warn("task {}: its lease could not be renewed: {}", id, e.what());
    }
    if (cancel_requested) {
        cancel(id, StopReason::client);
        return;
    }
    // Its record expired, was failed elsewhere when its lease lapsed, or
    // ended: a running round would spend a worker until max_run_ms on a
    // result nobody keeps. Stopped is the round renewed here, not whichever
    // holds the id by now: the task's next round may be queued since.
    if (!ours && control) {
        spdlog::warn("task {}: its record is no longer this instance's to run; its round is stopped", id);
        stop(*control, StopReason::released);
        return;
    }
    // A task never outlives its caller's authorisation silently.
    if (!control) return;
    std::function<std::optional<Json>()> authorised;
    {
        std::lock_guard lock(control->refusal_mutex);
        authorised = control->authorised;
    }
    if (authorised)
        if (auto refused = authorised(); refused && !transient(*refused)) {
            {
                std::lock_guard lock(control->refusal_mutex);
                control->refusal = std::move(*refused);
            }
            stop(*control, StopReason::unauthorised);
        }
}

void TaskRunner::watch() {
    const auto& settings = store_.settings();
    const std::int64_t renew_every = static_cast<std::int64_t>(settings.lease_ms / 3);
    for (;;) {
        std::vector<std::pair<std::string, std::shared_ptr<RoundControl>>> to_renew;
        std::vector<std::string> overdue;
        {
            std::unique_lock lock(mutex_);
            // Idle, it sleeps until a round is queued.
            if (held_.empty())
                watcher_wake_.wait(lock, [this] { return stopping_ || !held_.empty(); });
            else
                watcher_wake_.wait_for(lock, kWatchTick);
            if (stopping_ && (held_.empty() || abandoned_)) return;
            const std::int64_t now = now_ms();
            for (auto& [id, h] : held_) {
                if (now - h.renewed_ms >= renew_every) {
                    h.renewed_ms = now;
                    to_renew.emplace_back(id, h.started_ms ? h.control : nullptr);
                }
                if (h.started_ms && now - h.started_ms > static_cast<std::int64_t>(settings.max_run_ms))
                    overdue.push_back(id);
            }
        }
        for (const auto& id : overdue)
            cancel(id, StopReason::deadline);
        for (const auto& [id, control] : to_renew)
            renew(id, control);
    }
}

bool TaskRunner::stop(std::chrono::milliseconds grace) {
    std::vector<std::string> queued;
    {
        std::lock_guard lock(mutex_);
        if (!stopping_) {
            stopping_ = true;
            queued.assign(queue_.begin(), queue_.end());
            queue_.clear();
            for (const auto& id : queued)
                held_.erase(id);
        }
    }
    wake_.notify_all();
    std::vector<std::string> running;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, _] : held_)
            running.push_back(id);
    }
    for (const auto& id : running)
        cancel(id, StopReason::host_stopping);
    // Queued rounds never ran: their records say why at once.
    for (const auto& id : queued)
        try {
            store_.update(id, [this](TaskRecord& r) {
                if (terminal(r.status) || r.runner != instance_) return false;
                r.status = Status::failed;
                r.error = {{"code", -32603},
                           {"message", "The host stopped before this task's turn came; start the work again."}};
                r.status_message = r.error["message"];
                r.runner.clear();
                return true;
            });
        } catch (const state::BackendError&) {
        }
    const auto deadline = std::chrono::steady_clock::now() + grace;
    std::unique_lock lock(mutex_);
    watcher_wake_.wait_until(lock, deadline, [this] { return held_.empty(); });
    const bool ended = held_.empty();
    lock.unlock();
    watcher_wake_.notify_all();
    if (ended)
        for (auto& t : workers_)
            if (t.joinable()) t.join();
    return ended;
}

} // namespace gatehouse::tasks
