// The notification bus on Redis pub/sub. One channel carries both what
// changed (for every listener of every instance) and the messages for one
// 2025-11-25 session (for the instance doing its work); each message names
// the instance that sent it, which skips its own: it delivered them already.
#include "state/notification_bus.hpp"
#include "state/redis_client.hpp"
#include "state/state_backend.hpp"

#include "crypto/bytes.hpp"
#include "crypto/random_bytes.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

namespace gatehouse::state {

namespace {

using nlohmann::json;

const char* kind_name(Change::Kind kind) {
    switch (kind) {
    case Change::Kind::tools_list: return "tools";
    case Change::Kind::prompts_list: return "prompts";
    case Change::Kind::resources_list: return "resources";
    case Change::Kind::resource_updated: return "resource";
    case Change::Kind::task_status: return "task";
    case Change::Kind::task_cancel: return "task-cancel";
    }
    return "tools";
}

std::optional<Change::Kind> kind_named(const std::string& name) {
    if (name == "tools") return Change::Kind::tools_list;
    if (name == "prompts") return Change::Kind::prompts_list;
    if (name == "resources") return Change::Kind::resources_list;
    if (name == "resource") return Change::Kind::resource_updated;
    if (name == "task") return Change::Kind::task_status;
    if (name == "task-cancel") return Change::Kind::task_cancel;
    return std::nullopt;
}

class RedisBus final : public NotificationBus {
public:
    explicit RedisBus(std::shared_ptr<RedisClient> redis)
        : redis_(std::move(redis)), channel_(redis_->prefix() + "bus"), origin_(crypto::hex(crypto::random_bytes(12))) {
        subscription_ = redis_->subscribe(channel_); // at start, so a Redis that is not there stops the host
        listener_ = std::thread([this] { listen(); });
    }

    ~RedisBus() override {
        stopping_ = true;
        {
            std::lock_guard lock(subscription_mutex_);
            if (subscription_) subscription_->interrupt();
        }
        listener_.join();
    }

    void publish(const Change& change) override {
        deliver(change);
        json body{{"o", origin_}, {"k", kind_name(change.kind)}, {"u", change.uri}};
        if (!change.detail.empty()) body["d"] = change.detail;
        send(body);
    }

    bool relay(const SessionMessage& message) override {
        return send(json{{"o", origin_}, {"s", message.session}, {"m", message.body}});
    }

    bool shared() const override { return true; }

    std::optional<std::string> trouble() override {
        if (current()) return std::nullopt;
        return "not subscribed to Redis at " + redis_->where() + " (reconnecting)";
    }

private:
    // False when Redis did not take it. A change is delivered here all the
    // same, and the other instances learn of it when they reconnect (every
    // list changed); a relayed session message says so to its sender.
    bool send(const json& message) {
        try {
            redis_->command({"PUBLISH", channel_, message.dump()});
            return true;
        } catch (const BackendError& e) {
            spdlog::error("bus: {}", e.what());
            return false;
        }
    }

    void listen() {
        bool missed = false;
        while (!stopping_) {
            try {
                if (!current()) {
                    auto fresh = redis_->subscribe(channel_);
                    std::lock_guard lock(subscription_mutex_);
                    if (stopping_) return;
                    subscription_ = std::move(fresh);
                    spdlog::info("bus: subscribed to Redis again");
                }
                if (missed) {
                    // Whatever changed while nobody listened: every list may
                    // have, so subscribers re-list.
                    missed = false;
                    for (auto kind :
                         {Change::Kind::tools_list, Change::Kind::prompts_list, Change::Kind::resources_list})
                        deliver(Change{kind, {}});
                }
                auto message = current()->receive();
                if (!message) return; // interrupted: stopping
                try {
                    on_message(*message);
                } catch (const std::exception& e) {
                    // Anyone who may PUBLISH on this Redis reaches every
                    // instance here: what one message (or a listener it
                    // reached) throws costs that message, never the host.
                    spdlog::warn("bus: dropped a message that could not be handled: {}", e.what());
                }
            } catch (const BackendError& e) {
                if (stopping_) return;
                spdlog::error("bus: {}", e.what());
                {
                    std::lock_guard lock(subscription_mutex_);
                    subscription_.reset();
                }
                missed = true;
                // RedisClient paces the reconnects; this keeps a refused
                // SUBSCRIBE from spinning.
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
    }

    RedisSubscription* current() {
        std::lock_guard lock(subscription_mutex_);
        return subscription_.get();
    }

    // ["message", channel, payload]; subscribe confirmations are skipped.
    // The payload is whatever was published on the channel: this instance's
    // peers write it, but nothing else is trusted about it. A message with a
    // member that is not text where text belongs is dropped (json::value
    // would throw on it).
    void on_message(const RedisValue& message) {
        if (message.type != RedisValue::Type::array || message.items.size() != 3 || message.items[0].text != "message")
            return;
        const json body = json::parse(message.items[2].text, nullptr, false);
        if (!body.is_object()) return;
        for (const char* key : {"o", "k", "u", "d", "s", "m"})
            if (const auto it = body.find(key); it != body.end() && !it->is_string()) return;
        if (body.value("o", "") == origin_) return;
        if (body.contains("s")) {
            if (body.contains("m")) deliver(SessionMessage{body["s"].get<std::string>(), body["m"].get<std::string>()});
            return;
        }
        const auto kind = kind_named(body.value("k", ""));
        if (!kind) return;
        deliver(Change{*kind, body.value("u", ""), body.value("d", "")});
    }

    std::shared_ptr<RedisClient> redis_;
    const std::string channel_;
    const std::string origin_; // this instance, on its messages
    std::mutex subscription_mutex_;
    std::unique_ptr<RedisSubscription> subscription_;
    std::atomic<bool> stopping_{false};
    std::thread listener_;
};

} // namespace

std::shared_ptr<NotificationBus> make_redis_bus(std::shared_ptr<RedisClient> redis) {
    return std::make_shared<RedisBus>(std::move(redis));
}

std::shared_ptr<NotificationBus> make_redis_bus(const config::RedisSettings& settings) {
    return make_redis_bus(std::make_shared<RedisClient>(settings));
}

} // namespace gatehouse::state
