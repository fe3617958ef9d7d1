#include "mrtr/client_requests.hpp"

#include "session/random_token.hpp"

namespace gatehouse::mrtr {

std::pair<nlohmann::json, std::shared_ptr<ClientRequests::Pending>> ClientRequests::expect() {
    auto pending = std::make_shared<Pending>();
    std::lock_guard lock(mutex_);
    // 64 random bits: two copies of one session (on two instances) drawing
    // the same prefix is not a case to plan for.
    if (id_prefix_.empty()) id_prefix_ = session::random_token(8) + "-";
    nlohmann::json id = id_prefix_ + std::to_string(next_id_++);
    waiting_.emplace(id.dump(), pending);
    return {std::move(id), std::move(pending)};
}

bool ClientRequests::deliver(const nlohmann::json& response) {
    auto id = response.find("id");
    if (id == response.end()) return false;
    std::shared_ptr<Pending> pending;
    {
        std::lock_guard lock(mutex_);
        auto it = waiting_.find(id->dump());
        if (it == waiting_.end()) return false;
        pending = std::move(it->second);
        waiting_.erase(it);
    }
    {
        std::lock_guard lock(pending->mutex);
        pending->response = response;
    }
    pending->arrived.notify_all();
    return true;
}

void ClientRequests::forget(const nlohmann::json& id) {
    std::lock_guard lock(mutex_);
    waiting_.erase(id.dump());
}

std::optional<nlohmann::json> ClientRequests::wait(Pending& pending, std::chrono::milliseconds timeout,
                                                   const std::function<bool()>& stop) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(pending.mutex);
    while (!pending.response) {
        if (stop() || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        pending.arrived.wait_for(lock, std::chrono::milliseconds(50));
    }
    return pending.response;
}

} // namespace gatehouse::mrtr
