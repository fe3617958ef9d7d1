#include "protocol/subscriptions.hpp"

#include <set>
#include <vector>

namespace gatehouse::protocol {

Subscriptions::Subscriptions(std::shared_ptr<NotificationBus> bus, std::function<Json()> capabilities, Json server_info,
                             std::size_t max_open)
    : bus_(std::move(bus)), capabilities_(std::move(capabilities)), server_info_(std::move(server_info)),
      max_open_(max_open) {}

struct Subscriptions::Subscription {
    Json id;
    std::shared_ptr<Outbound> reply;
    std::weak_ptr<Connection> connection;
    bool tools_list = false;
    bool prompts_list = false;
    bool resources_list = false;
    std::set<std::string> resources;
    std::set<std::string> tasks;
};

namespace {

constexpr std::size_t kMaxResourceSubscriptions = 1000;
constexpr std::size_t kMaxUriBytes = 4096;

Json tagged(const Json& subscription_id, const char* method, Json params = Json::object()) {
    params["_meta"][meta_key::subscription_id] = subscription_id;
    return make_notification(method, std::move(params));
}

} // namespace

void Subscriptions::open(const std::shared_ptr<Connection>& connection, Request& request) {
    auto filter = request.params.find("notifications");
    if (filter == request.params.end() || !filter->is_object())
        throw ProtocolError(error_code::invalid_params,
                            "subscriptions/listen needs params.notifications: an object naming what to receive "
                            "(toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions, "
                            "taskIds).");
    auto sub = std::make_shared<Subscription>();
    sub->id = request.id;
    sub->reply = request.reply;
    sub->connection = connection;
    Json honored = Json::object();
    const auto flag = [&](const char* key, bool supported, bool& field) {
        auto it = filter->find(key);
        if (it == filter->end()) return;
        if (!it->is_boolean())
            throw ProtocolError(error_code::invalid_params,
                                std::string("params.notifications.") + key + " must be true or false.");
        if (it->get<bool>() && supported) {
            field = true;
            honored[key] = true;
        }
    };
    const Json caps = capabilities_();
    const auto supports = [&](const char* capability, const char* feature) {
        auto c = caps.find(capability);
        return c != caps.end() && c->value(feature, false);
    };
    flag("toolsListChanged", supports("tools", "listChanged"), sub->tools_list);
    flag("promptsListChanged", supports("prompts", "listChanged"), sub->prompts_list);
    flag("resourcesListChanged", supports("resources", "listChanged"), sub->resources_list);
    if (auto uris = filter->find("resourceSubscriptions"); uris != filter->end()) {
        if (!uris->is_array() || uris->size() > kMaxResourceSubscriptions)
            throw ProtocolError(error_code::invalid_params,
                                "params.notifications.resourceSubscriptions must be an array of at most " +
                                    std::to_string(kMaxResourceSubscriptions) + " resource URIs.");
        for (const auto& uri : *uris)
            if (!uri.is_string() || uri.get_ref<const std::string&>().empty() ||
                uri.get_ref<const std::string&>().size() > kMaxUriBytes)
                throw ProtocolError(error_code::invalid_params,
                                    "params.notifications.resourceSubscriptions holds something that is not a "
                                    "resource URI (a non-empty string of at most " +
                                        std::to_string(kMaxUriBytes) + " bytes).");
        if (supports("resources", "subscribe")) {
            for (const auto& uri : *uris)
                sub->resources.insert(uri.get<std::string>());
            honored["resourceSubscriptions"] = *uris;
        }
    }
    if (auto ids = filter->find("taskIds"); ids != filter->end()) {
        if (!task_filter_)
            throw ProtocolError(error_code::invalid_params,
                                "This server runs no tasks: drop params.notifications.taskIds.");
        Json followed = task_filter_(request, *ids);
        for (const auto& id : followed)
            sub->tasks.insert(id.get<std::string>());
        honored["taskIds"] = std::move(followed);
    }
    {
        std::lock_guard lock(mutex_);
        if (subscriptions_.size() >= max_open_)
            throw ProtocolError(error_code::internal_error,
                                "The server has " + std::to_string(max_open_) +
                                    " subscriptions open, its limit; close one or retry later.");
    }
    // Its id tags every notification it delivers and addresses its
    // cancellation, so a second request under an open one's id is refused.
    request.in_flight = connection->begin_unique(request.id);
    if (!request.in_flight)
        throw ProtocolError(error_code::invalid_request,
                            "This request's id is already in use by a request still open on this connection (a "
                            "subscription or a call); send subscriptions/listen with a new id.");
    // The acknowledgement goes first; nothing is delivered before it.
    sub->reply->send(tagged(sub->id, "notifications/subscriptions/acknowledged", {{"notifications", honored}}));
    const std::uint64_t token = bus_->subscribe([weak = std::weak_ptr<Subscription>(sub)](const Change& change) {
        auto s = weak.lock();
        if (!s) return;
        switch (change.kind) {
        case Change::Kind::tools_list:
            if (s->tools_list) s->reply->send(tagged(s->id, "notifications/tools/list_changed"));
            break;
        case Change::Kind::prompts_list:
            if (s->prompts_list) s->reply->send(tagged(s->id, "notifications/prompts/list_changed"));
            break;
        case Change::Kind::resources_list:
            if (s->resources_list) s->reply->send(tagged(s->id, "notifications/resources/list_changed"));
            break;
        case Change::Kind::resource_updated:
            if (s->resources.count(change.uri))
                s->reply->send(tagged(s->id, "notifications/resources/updated", {{"uri", change.uri}}));
            break;
        case Change::Kind::task_status:
            // The ids were checked as the caller's when the listen began.
            if (s->tasks.count(change.uri)) {
                Json task = Json::parse(change.detail, nullptr, false);
                if (task.is_object()) s->reply->send(tagged(s->id, "notifications/tasks", std::move(task)));
            }
            break;
        case Change::Kind::task_cancel: break;
        }
    });
    {
        std::lock_guard lock(mutex_);
        subscriptions_.emplace(token, sub);
    }
    // Closing the stream (HTTP) or notifications/cancelled (stdio) ends it.
    request.in_flight->on_cancel([this, token] { end(token, false); });
}

void Subscriptions::end(std::uint64_t token, bool graceful) {
    std::shared_ptr<Subscription> sub;
    {
        std::lock_guard lock(mutex_);
        auto it = subscriptions_.find(token);
        if (it == subscriptions_.end()) return;
        sub = std::move(it->second);
        subscriptions_.erase(it);
    }
    bus_->unsubscribe(token);
    if (auto connection = sub->connection.lock()) connection->end(sub->id);
    if (graceful) {
        Json result = {{"resultType", "complete"}};
        result["_meta"][meta_key::subscription_id] = sub->id;
        result["_meta"][meta_key::server_info] = server_info_;
        sub->reply->send(make_result(sub->id, std::move(result)));
    } else {
        sub->reply->ended_without_answer();
    }
}

void Subscriptions::close_all() {
    std::vector<std::uint64_t> tokens;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [token, _] : subscriptions_)
            tokens.push_back(token);
    }
    for (auto token : tokens)
        end(token, true);
}

// 2025-11-25: resource updates on the connection's own channel (stdout, or
// the HTTP session's GET stream) for as long as the connection lives.
Json Subscriptions::follow_resource(Request& request, bool subscribe) {
    auto uri_it = request.params.find("uri");
    if (uri_it == request.params.end() || !uri_it->is_string() || uri_it->get_ref<const std::string&>().empty() ||
        uri_it->get_ref<const std::string&>().size() > kMaxUriBytes)
        throw ProtocolError(error_code::invalid_params, "params.uri must be a resource URI (a non-empty string of at "
                                                        "most " +
                                                            std::to_string(kMaxUriBytes) + " bytes).");
    const std::string uri = uri_it->get<std::string>();
    Connection& connection = *request.connection;
    bool changed = false;
    {
        std::lock_guard lock(connection.legacy_mutex);
        if (subscribe && !connection.legacy_resource_subscriptions.count(uri) &&
            connection.legacy_resource_subscriptions.size() >= kMaxResourceSubscriptions)
            throw ProtocolError(error_code::invalid_params, "This connection already follows " +
                                                                std::to_string(kMaxResourceSubscriptions) +
                                                                " resources, the limit; unsubscribe from one first.");
        changed = set_following(connection, uri, subscribe);
    }
    if (changed)
        connection.record_handshake([&] {
            std::lock_guard lock(connection.legacy_mutex);
            set_following(connection, uri, !subscribe);
        });
    return Json::object();
}

// Follows exactly `uris` (at most the limit): a record written by another
// instance.
void Subscriptions::follow_resources(Connection& connection, const std::set<std::string>& uris) {
    std::lock_guard lock(connection.legacy_mutex);
    std::vector<std::string> dropped;
    for (const auto& [uri, _] : connection.legacy_resource_subscriptions)
        if (!uris.count(uri)) dropped.push_back(uri);
    for (const auto& uri : dropped)
        set_following(connection, uri, false);
    for (const auto& uri : uris) {
        if (connection.legacy_resource_subscriptions.size() >= kMaxResourceSubscriptions) break;
        set_following(connection, uri, true);
    }
}

// Under connection.legacy_mutex. True when it changed anything. The
// listener belongs to the connection: it leaves the bus when the URI is
// unfollowed, the session ends (Connection::stop_following) or the
// connection goes.
bool Subscriptions::set_following(Connection& connection, const std::string& uri, bool follow) {
    auto& subscriptions = connection.legacy_resource_subscriptions;
    if (!follow) return subscriptions.erase(uri) > 0;
    if (subscriptions.count(uri)) return false;
    if (connection.legacy_following_ended) {
        // The handshake still says so; nobody is left to notify.
        subscriptions.emplace(uri, state::BusListener());
        return true;
    }
    subscriptions.emplace(
        uri, state::BusListener(bus_, [uri, connection = connection.weak_from_this()](const Change& change) {
            if (change.kind != Change::Kind::resource_updated || change.uri != uri) return;
            if (auto alive = connection.lock())
                alive->outbound().send(make_notification("notifications/resources/updated", {{"uri", uri}}));
        }));
    return true;
}

// 2025-11-25: tools/list_changed on the session's own channel (stdout, or
// the HTTP session's GET stream) until the session ends.
void Subscriptions::follow_list_changes(Connection& connection) {
    std::lock_guard lock(connection.legacy_mutex);
    if (connection.legacy_following_ended) return;
    connection.legacy_list_changes =
        state::BusListener(bus_, [connection = connection.weak_from_this()](const Change& change) {
            const char* method = change.kind == Change::Kind::tools_list       ? "notifications/tools/list_changed"
                                 : change.kind == Change::Kind::prompts_list   ? "notifications/prompts/list_changed"
                                 : change.kind == Change::Kind::resources_list ? "notifications/resources/list_changed"
                                                                               : nullptr;
            if (!method) return;
            if (auto alive = connection.lock()) alive->outbound().send(make_notification(method, Json::object()));
        });
}

std::size_t Subscriptions::open_count() {
    std::lock_guard lock(mutex_);
    return subscriptions_.size();
}

Subscriptions::~Subscriptions() {
    std::lock_guard lock(mutex_);
    for (const auto& [token, _] : subscriptions_)
        bus_->unsubscribe(token);
}

} // namespace gatehouse::protocol
