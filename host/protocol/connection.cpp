#include "protocol/connection.hpp"

#include "state/state_backend.hpp"

#include <spdlog/spdlog.h>

#include <vector>

namespace gatehouse::protocol {

void InFlight::cancel() {
    std::function<void()> action;
    {
        std::lock_guard lock(mutex_);
        if (cancelled.exchange(true)) return;
        action.swap(action_);
    }
    if (action) action();
}

void InFlight::on_cancel(std::function<void()> action) {
    {
        std::lock_guard lock(mutex_);
        if (!cancelled) {
            action_ = std::move(action);
            return;
        }
    }
    action();
}

void Connection::record_handshake(const std::function<void()>& undo) {
    if (!handshake_changed) return;
    try {
        handshake_changed(*this);
    } catch (const state::BackendError& e) {
        spdlog::error("2025-11-25 session: state backend: {}", e.what());
        undo();
        throw ProtocolError(error_code::internal_error,
                            "STATE_UNAVAILABLE: the host cannot reach its session state right now; try again shortly.",
                            {{"code", "STATE_UNAVAILABLE"}, {"retryAfterSeconds", 1}});
    }
}

void Connection::stop_following() {
    std::lock_guard lock(legacy_mutex);
    legacy_following_ended = true;
    legacy_list_changes.reset();
    for (auto& [_, listener] : legacy_resource_subscriptions)
        listener.reset();
}

namespace {

// The in-flight table's key for a request id: a JSON-RPC id is a string or an
// integer, kept apart by the quote; written without dump(), whose output
// adapter is one allocation more on every call.
std::string id_key(const Json& id) {
    if (id.is_number_integer())
        return id.is_number_unsigned() ? std::to_string(id.get<std::uint64_t>())
                                       : std::to_string(id.get<std::int64_t>());
    if (id.is_string()) return '"' + id.get_ref<const std::string&>();
    return id.dump();
}

} // namespace

std::shared_ptr<InFlight> Connection::begin(const Json& id) {
    auto state = std::make_shared<InFlight>();
    std::lock_guard lock(in_flight_mutex_);
    in_flight_[id_key(id)] = state;
    return state;
}

std::shared_ptr<InFlight> Connection::begin_unique(const Json& id) {
    auto state = std::make_shared<InFlight>();
    std::lock_guard lock(in_flight_mutex_);
    if (!in_flight_.emplace(id_key(id), state).second) return nullptr;
    return state;
}

void Connection::end(const Json& id) {
    std::lock_guard lock(in_flight_mutex_);
    in_flight_.erase(id_key(id));
}

void Connection::end(const Json& id, const std::shared_ptr<InFlight>& state) {
    std::lock_guard lock(in_flight_mutex_);
    if (auto it = in_flight_.find(id_key(id)); it != in_flight_.end() && it->second == state) in_flight_.erase(it);
}

// Cancel actions run outside the lock: they may end their own request.
void Connection::cancel(const Json& id) {
    std::shared_ptr<InFlight> state;
    {
        std::lock_guard lock(in_flight_mutex_);
        if (auto it = in_flight_.find(id_key(id)); it != in_flight_.end()) state = it->second;
    }
    if (state) state->cancel();
}

void Connection::cancel_all() {
    std::vector<std::shared_ptr<InFlight>> states;
    {
        std::lock_guard lock(in_flight_mutex_);
        for (auto& [_, state] : in_flight_)
            states.push_back(state);
    }
    for (auto& state : states)
        state->cancel();
}

} // namespace gatehouse::protocol
