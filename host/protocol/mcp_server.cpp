#include "protocol/mcp_server.hpp"

#include "mrtr/state_keys.hpp"
#include "plugins/loaded_plugin.hpp"
#include "protocol/list_cursor.hpp"
#include "protocol/list_page.hpp"
#include "protocol/log_level.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <set>
#include <vector>

namespace gatehouse::protocol {

bool nests_deeper_than(std::string_view text, std::size_t limit) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
        case '"': in_string = true; break;
        case '[':
        case '{':
            if (++depth > limit) return true;
            break;
        case ']':
        case '}':
            if (depth > 0) --depth;
            break;
        default: break;
        }
    }
    return false;
}

namespace {

bool valid_id(const Json& id) {
    return id.is_string() || id.is_number_integer();
}

std::string supported_list() {
    std::string out;
    for (auto v : kSupportedVersions)
        out += (out.empty() ? "" : ", ") + std::string(v);
    return out;
}

Json supported_versions() {
    Json out = Json::array();
    for (auto v : kSupportedVersions)
        out.push_back(std::string(v));
    return out;
}

// Methods cheap enough to answer on the reader's thread, in arrival order.
// Everything that runs plugin code goes to the pool instead.
bool answered_inline(const std::string& method) {
    return method != "tools/call" && method != "resources/read" && method != "prompts/get" &&
           method != "completion/complete";
}

} // namespace

McpServer::McpServer(const plugins::ToolRegistry& registry, const gate::GatePipeline& gate,
                     config::ServerIdentity identity, config::Limits limits, RequestPool& pool,
                     config::RateLimits rate_limits, const config::InputRequestSettings& input_requests,
                     std::shared_ptr<const mrtr::RequestStateSealer> state_sealer)
    : registry_(registry), identity_(std::move(identity)), limits_(limits), rate_limiter_(std::move(rate_limits)),
      input_rounds_(state_sealer ? std::move(state_sealer)
                                 : mrtr::make_request_state_sealer(input_requests, identity_.name),
                    std::chrono::milliseconds(input_requests.client_timeout_ms)),
      disclosure_(registry), tool_call_(registry, gate, limits_, rate_limiter_, input_rounds_, &disclosure_),
      resource_read_(registry, input_rounds_), prompt_get_(registry, input_rounds_), completion_(registry), pool_(pool),
      in_flight_(limits.max_in_flight, limits.max_in_flight_per_principal) {
    server_info_ = {{"name", identity_.name}, {"version", identity_.version}};
    if (!identity_.title.empty()) server_info_["title"] = identity_.title;
}

void McpServer::on_message(const std::shared_ptr<Connection>& connection, std::string_view text,
                           std::shared_ptr<Outbound> reply) {
    auto& out = reply ? *reply : connection->outbound();
    if (nests_deeper_than(text, limits_.max_json_depth)) {
        out.send(make_error(nullptr, error_code::invalid_request,
                            "The message nests deeper than " + std::to_string(limits_.max_json_depth) +
                                " levels; flatten it."));
        return;
    }
    Json message;
    try {
        message = Json::parse(text);
    } catch (const Json::exception& e) {
        out.send(make_error(nullptr, error_code::parse_error, std::string("Parse error: ") + e.what()));
        return;
    }
    handle(connection, std::move(message), std::move(reply));
}

void McpServer::handle(const std::shared_ptr<Connection>& connection, Json&& message, std::shared_ptr<Outbound> reply) {
    if (!reply) reply = connection->outbound_ptr();
    auto& out = *reply;
    if (message.is_array()) {
        out.send(make_error(nullptr, error_code::invalid_request,
                            "JSON-RPC batches are not supported by MCP; send one message per line."));
        return;
    }
    if (!message.is_object()) {
        out.send(make_error(nullptr, error_code::invalid_request, "A JSON-RPC message must be a JSON object."));
        return;
    }
    auto jsonrpc = message.find("jsonrpc");
    const bool has_method = message.contains("method");
    const bool has_id = message.contains("id");
    if (jsonrpc == message.end() || *jsonrpc != "2.0") {
        const Json id = has_id && valid_id(message["id"]) ? message["id"] : Json();
        out.send(make_error(id, error_code::invalid_request, "The message must carry \"jsonrpc\": \"2.0\"."));
        return;
    }
    if (!has_method) {
        const bool has_result = message.contains("result");
        const bool has_error = message.contains("error");
        if (has_id && has_result != has_error) {
            // A response to what a request asked the client (2025-11-25);
            // the spec says never to reply to a response.
            if (!connection->client_requests().deliver(message))
                spdlog::debug("ignoring a response nothing waits for (id {})", message["id"].dump());
            return;
        }
        // Neither request, notification nor response: an answer is the only
        // way the sender learns it was dropped.
        const Json id = has_id && valid_id(message["id"]) ? message["id"] : Json();
        out.send(make_error(id, error_code::invalid_request,
                            has_result || has_error
                                ? "A response carries an \"id\" and exactly one of \"result\" and \"error\"."
                                : "The message has no \"method\"."));
        return;
    }
    if (!message["method"].is_string()) {
        const Json id = has_id && valid_id(message["id"]) ? message["id"] : Json();
        out.send(make_error(id, error_code::invalid_request, "\"method\" must be a string."));
        return;
    }
    if (!has_id) {
        on_notification(*connection, message);
        return;
    }
    if (!valid_id(message["id"])) {
        out.send(make_error(nullptr, error_code::invalid_request,
                            "A request id must be a string or an integer (and never null)."));
        return;
    }
    on_request(connection, std::move(message), std::move(reply));
}

void McpServer::on_notification(Connection& connection, const Json& message) {
    const auto& method = message["method"].get_ref<const std::string&>();
    if (method == "notifications/cancelled") {
        auto params = message.find("params");
        if (params != message.end() && params->is_object()) {
            auto id = params->find("requestId");
            if (id != params->end() && valid_id(*id)) connection.cancel(*id);
        }
    } else if (method == "notifications/initialized") {
        // The handshake is already complete once initialize was answered.
    } else {
        spdlog::debug("ignoring notification {}", method);
    }
}

void McpServer::on_request(const std::shared_ptr<Connection>& connection, Json&& message,
                           std::shared_ptr<Outbound> reply) {
    const Json id = message["id"];
    Request request;
    try {
        request = decode_request(*connection, std::move(message));
    } catch (const ProtocolError& e) {
        reply->reject(make_error(id, e.code(), e.what(), e.data()));
        return;
    }
    request.reply = std::move(reply);
    if (request.method == "subscriptions/listen" && request.revision == Revision::modern_2026_07_28) {
        // Long-lived and threadless: it waits for changes, not for a worker.
        try {
            open_subscription(connection, request);
        } catch (const ProtocolError& e) {
            request.reply->send(make_error(request.id, e.code(), e.what(), e.data()));
        }
        return;
    }
    if (answered_inline(request.method)) {
        request.reply->send(dispatch(request));
        return;
    }
    const std::string principal = connection->principal().owner_key();
    if (auto full = in_flight_.acquire(principal)) {
        request.reply->send(make_error(
            id, error_code::internal_error, full->message,
            {{"code", gate::refusal_code::too_many_in_flight}, {"limit", full->limit}, {"maxInFlight", full->value}}));
        return;
    }
    // The deadline counts from here, not from when a worker is free: the
    // agent gets an answer within it even when every worker is busy.
    const plugins::Tool* tool = nullptr;
    if (auto name = request.params.find("name"); name != request.params.end() && name->is_string()) {
        tool = registry_.find(name->get_ref<const std::string&>());
        // call_tool waits for its place and times out as the tool it forwards to.
        if (!tool && disclosure_.meta_tool(name->get_ref<const std::string&>()) && *name == ToolDisclosure::kCallTool)
            if (auto args = request.params.find("arguments"); args != request.params.end() && args->is_object())
                if (auto target = args->find("name"); target != args->end() && target->is_string())
                    tool = registry_.find(target->get_ref<const std::string&>());
    }
    const std::uint64_t timeout_ms =
        tool && tool->plugin ? tool->plugin->call_limits().tool_timeout_ms : limits_.tool_timeout_ms;

    auto state = connection->begin(id);
    request.in_flight = state;
    // Whoever claims the answer (the worker, or the deadline) gives the
    // request's place back, once.
    auto give_back = [this, connection, state, id, principal] {
        connection->end(id, state);
        in_flight_.release(principal);
    };
    const auto ticket = deadlines_.schedule(
        limits::CallDeadlines::Clock::now() + std::chrono::milliseconds(timeout_ms),
        [this, reply = request.reply, state, give_back, id, revision = request.revision, tool, timeout_ms,
         name = tool ? tool->name : std::string()] {
            // A call the client cancelled gets no answer; its worker gives the place back.
            if (state->cancelled.load() || !state->claim_answer()) return;
            state->cancel(); // sets what the plugin polls through is_cancelled
            spdlog::warn("tool '{}' did not finish within {} ms; cancelled, and its late result will be discarded",
                         name, timeout_ms);
            give_back(); // before the answer: a client that saw it may send the next call at once
            reply->send(finish(id, revision, timeout_result(name, tool, timeout_ms)));
        });
    const bool tool_call = request.method == "tools/call" && tool && tool->plugin;
    std::shared_ptr<plugins::CallPace> pace = tool_call ? tool->pace : nullptr;
    const bool quick = pace && pace->quick();
    auto job = [this, request = std::move(request), ticket, give_back, pace]() mutable {
        // A call cancelled while it waited for a worker must not reach its
        // plugin at all: the tool may write, spend or destroy.
        Json response;
        if (!request.cancelled()) {
            const auto began = std::chrono::steady_clock::now();
            response = dispatch(request);
            if (pace) pace->record(std::chrono::steady_clock::now() - began);
        }
        deadlines_.withdraw(ticket);
        if (!request.in_flight->claim_answer()) {
            spdlog::debug("discarding the late answer to request {} (it timed out)", request.id.dump());
            return;
        }
        give_back();
        // A cancelled request gets no answer at all, as the spec asks.
        if (!request.cancelled())
            request.reply->send(response);
        else
            request.reply->ended_without_answer();
    };
    // A tool call waits for a place in its plugin (max_in_flight_per_plugin)
    // before it takes a worker.
    if (tool_call)
        tool->plugin->admit(std::move(job), [this, quick](std::function<void()> admitted) {
            pool_.submit(std::move(admitted), quick);
        });
    else
        pool_.submit(std::move(job));
}

Request McpServer::decode_request(Connection& connection, Json&& message) const {
    Request r;
    r.id = std::move(message["id"]);
    r.method = std::move(message["method"].get_ref<std::string&>());
    r.connection = &connection;
    if (auto p = message.find("params"); p != message.end() && !p->is_null()) {
        if (!p->is_object()) throw ProtocolError(error_code::invalid_params, "params must be a JSON object.");
        r.params = std::move(*p);
    }
    const Json* meta = nullptr;
    if (auto m = r.params.find("_meta"); m != r.params.end()) {
        if (!m->is_object()) throw ProtocolError(error_code::invalid_params, "params._meta must be a JSON object.");
        meta = &*m;
    }
    const Json* version = nullptr;
    if (meta)
        if (auto v = meta->find(meta_key::protocol_version); v != meta->end()) version = &*v;

    if (version) {
        if (!version->is_string())
            throw ProtocolError(error_code::invalid_params,
                                std::string("_meta[\"") + meta_key::protocol_version + "\"] must be a string.");
        const auto& requested = version->get_ref<const std::string&>();
        if (requested == kModernVersion) {
            r.revision = Revision::modern_2026_07_28;
        } else if (requested == kLegacyVersion) {
            // A version this host supports, so not -32022: a client would
            // pick it again from `supported` and retry for ever. What is
            // missing is the revision's handshake; the error of that era
            // (Invalid Request) is what sends a dual-era client to initialize.
            if (!connection.legacy_initialized)
                throw ProtocolError(error_code::invalid_request,
                                    "Protocol version " + requested +
                                        " starts with initialize: call initialize first, then send this request "
                                        "again (or send it as " +
                                        std::string(kModernVersion) + ", which needs no handshake).");
            r.revision = Revision::legacy_2025_11_25;
        } else {
            throw ProtocolError(error_code::unsupported_protocol_version,
                                "Unsupported protocol version '" + requested + "' (supported: " + supported_list() +
                                    "; " + std::string(kLegacyVersion) + " starts with initialize)",
                                {{"supported", supported_versions()}, {"requested", requested}});
        }
    } else if (r.method == "initialize" || connection.legacy_initialized || r.method == "ping") {
        r.revision = Revision::legacy_2025_11_25;
    } else {
        throw ProtocolError(error_code::invalid_params,
                            std::string("The request has no _meta[\"") + meta_key::protocol_version +
                                "\"]: send it on every request (" + std::string(kModernVersion) +
                                "), or call initialize first (" + std::string(kLegacyVersion) + ").");
    }

    if (r.revision == Revision::modern_2026_07_28) {
        auto caps = meta->find(meta_key::client_capabilities);
        if (caps == meta->end() || !caps->is_object())
            throw ProtocolError(error_code::invalid_params,
                                std::string("The request has no _meta[\"") + meta_key::client_capabilities +
                                    "\"] object; send {} when the client declares no capabilities.");
        r.client_capabilities = *caps;
        if (auto level = meta->find(meta_key::log_level); level != meta->end()) {
            std::optional<int> parsed = level->is_string() ? parse_log_level(level->get<std::string>()) : std::nullopt;
            if (!parsed)
                throw ProtocolError(error_code::invalid_params,
                                    std::string("_meta[\"") + meta_key::log_level +
                                        "\"] must be one of debug, info, notice, warning, error, critical, alert, "
                                        "emergency.");
            r.log_level = parsed;
        }
    } else {
        const int level = connection.legacy_log_level.load();
        if (level >= 0) r.log_level = level;
        std::lock_guard lock(connection.legacy_mutex);
        r.client_capabilities = connection.legacy_client_capabilities;
    }
    if (meta)
        if (auto token = meta->find("progressToken"); token != meta->end()) {
            if (!token->is_string() && !token->is_number_integer())
                throw ProtocolError(error_code::invalid_params, "_meta.progressToken must be a string or an integer.");
            r.progress_token = *token;
        }
    return r;
}

Json McpServer::dispatch(Request& request) const {
    try {
        const std::string& m = request.method;
        const bool modern = request.revision == Revision::modern_2026_07_28;
        if (m == "tools/call") return finish(request, tool_call_.run(request));
        if (m == "tools/list") return finish(request, list_tools(request));
        // Offered only when some loaded family declares them, like the capabilities say.
        if (registry_.offers_resources()) {
            if (m == "resources/list") return finish(request, list_resources(request));
            if (m == "resources/templates/list") return finish(request, list_resource_templates(request));
            if (m == "resources/read") return finish(request, resource_read_.run(request));
        }
        if (registry_.offers_prompts()) {
            if (m == "prompts/list") return finish(request, list_prompts(request));
            if (m == "prompts/get") return finish(request, prompt_get_.run(request));
        }
        if (registry_.offers_completions() && m == "completion/complete")
            return finish(request, completion_.run(request));
        if (modern && m == "server/discover") return finish(request, discover(request));
        if (!modern) {
            if (m == "initialize") return finish(request, initialize(request));
            if (m == "ping") return finish(request, Json::object());
            if (m == "logging/setLevel") return finish(request, set_log_level(request));
            if (m == "resources/subscribe" && registry_.offers_resources())
                return finish(request, legacy_resource_subscription(request, true));
            if (m == "resources/unsubscribe" && registry_.offers_resources())
                return finish(request, legacy_resource_subscription(request, false));
        }
        throw ProtocolError(error_code::method_not_found, "Method not found: '" + m + "' (protocol revision " +
                                                              std::string(revision_name(request.revision)) + ")");
    } catch (const ProtocolError& e) {
        return make_error(request.id, e.code(), e.what(), e.data());
    } catch (const std::exception& e) {
        spdlog::error("{} failed: {}", request.method, e.what());
        return make_error(request.id, error_code::internal_error, "Internal error while handling " + request.method);
    }
}

Json McpServer::finish(const Request& request, Json result) const {
    return finish(request.id, request.revision, std::move(result));
}

Json McpServer::finish(const Json& id, Revision revision, Json result) const {
    if (revision == Revision::modern_2026_07_28) {
        if (!result.contains("resultType")) result["resultType"] = "complete";
        result["_meta"][meta_key::server_info] = server_info_;
    }
    return make_result(id, std::move(result));
}

Json McpServer::timeout_result(const std::string& tool, const plugins::Tool* known, std::uint64_t timeout_ms) const {
    const bool own = known && known->plugin && known->plugin->call_limits().tool_timeout_overridden;
    const std::string limit = own ? "tool_timeout_ms of its plugins entry" : "limits.tool_timeout_ms";
    gate::Refusal r;
    r.code = gate::refusal_code::tool_timeout;
    r.message = "Tool '" + tool + "' took longer than " + std::to_string(timeout_ms) +
                " ms, this server's limit for it (" + limit +
                "); the host cancelled the call and will discard any late result. Try again with less work, or "
                "later.";
    r.next = {{"timeoutMs", timeout_ms}};
    return r.to_tool_result();
}

Json McpServer::capabilities(Revision revision) const {
    // List changes and resource updates reach 2026-07-28 clients on
    // subscriptions/listen. A 2025-11-25 session hears of tool list changes
    // (a configuration re-read) on its own channel; the other lists never
    // change under it.
    const bool modern = revision == Revision::modern_2026_07_28;
    Json caps = {{"tools", {{"listChanged", true}}}, {"logging", Json::object()}};
    // resources/subscribe (2025-11-25) and subscriptions/listen (2026-07-28)
    // both deliver resource updates.
    if (registry_.offers_resources()) caps["resources"] = {{"listChanged", modern}, {"subscribe", true}};
    if (registry_.offers_prompts()) caps["prompts"] = {{"listChanged", modern}};
    if (registry_.offers_completions()) caps["completions"] = Json::object();
    return caps;
}

// ---------------------------------------------------------------- subscriptions/listen

struct McpServer::Subscription {
    Json id;
    std::shared_ptr<Outbound> reply;
    std::weak_ptr<Connection> connection;
    bool tools_list = false;
    bool prompts_list = false;
    bool resources_list = false;
    std::set<std::string> resources;
};

namespace {

constexpr std::size_t kMaxResourceSubscriptions = 1000;
constexpr std::size_t kMaxUriBytes = 4096;

Json tagged(const Json& subscription_id, const char* method, Json params = Json::object()) {
    params["_meta"][meta_key::subscription_id] = subscription_id;
    return make_notification(method, std::move(params));
}

} // namespace

void McpServer::open_subscription(const std::shared_ptr<Connection>& connection, Request& request) {
    auto filter = request.params.find("notifications");
    if (filter == request.params.end() || !filter->is_object())
        throw ProtocolError(error_code::invalid_params,
                            "subscriptions/listen needs params.notifications: an object naming what to receive "
                            "(toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions).");
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
    const Json caps = capabilities(Revision::modern_2026_07_28);
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
    {
        std::lock_guard lock(subscriptions_mutex_);
        if (subscriptions_.size() >= limits_.max_in_flight)
            throw ProtocolError(error_code::internal_error,
                                "The server has " + std::to_string(limits_.max_in_flight) +
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
        }
    });
    {
        std::lock_guard lock(subscriptions_mutex_);
        subscriptions_.emplace(token, sub);
    }
    // Closing the stream (HTTP) or notifications/cancelled (stdio) ends it.
    request.in_flight->on_cancel([this, token] { end_subscription(token, false); });
}

void McpServer::end_subscription(std::uint64_t token, bool graceful) {
    std::shared_ptr<Subscription> sub;
    {
        std::lock_guard lock(subscriptions_mutex_);
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

void McpServer::close_subscriptions() {
    std::vector<std::uint64_t> tokens;
    {
        std::lock_guard lock(subscriptions_mutex_);
        for (const auto& [token, _] : subscriptions_)
            tokens.push_back(token);
    }
    for (auto token : tokens)
        end_subscription(token, true);
}

// 2025-11-25: resource updates on the connection's own channel (stdout, or
// the HTTP session's GET stream) for as long as the connection lives.
Json McpServer::legacy_resource_subscription(Request& request, bool subscribe) const {
    auto uri_it = request.params.find("uri");
    if (uri_it == request.params.end() || !uri_it->is_string() || uri_it->get_ref<const std::string&>().empty() ||
        uri_it->get_ref<const std::string&>().size() > kMaxUriBytes)
        throw ProtocolError(error_code::invalid_params, "params.uri must be a resource URI (a non-empty string of at "
                                                        "most " +
                                                            std::to_string(kMaxUriBytes) + " bytes).");
    const std::string uri = uri_it->get<std::string>();
    Connection& connection = *request.connection;
    std::lock_guard lock(connection.legacy_mutex);
    auto& subscriptions = connection.legacy_resource_subscriptions;
    if (!subscribe) {
        if (auto it = subscriptions.find(uri); it != subscriptions.end()) {
            bus_->unsubscribe(it->second);
            subscriptions.erase(it);
        }
        return Json::object();
    }
    if (subscriptions.count(uri)) return Json::object();
    if (subscriptions.size() >= kMaxResourceSubscriptions)
        throw ProtocolError(error_code::invalid_params, "This connection already follows " +
                                                            std::to_string(kMaxResourceSubscriptions) +
                                                            " resources, the limit; unsubscribe from one first.");
    auto token = std::make_shared<std::uint64_t>(0);
    *token = bus_->subscribe([uri, token, connection = connection.weak_from_this(),
                              bus = std::weak_ptr<NotificationBus>(bus_)](const Change& change) {
        if (change.kind != Change::Kind::resource_updated || change.uri != uri) return;
        auto alive = connection.lock();
        if (!alive) {
            // The connection ended without unsubscribing: forget it now.
            if (auto b = bus.lock()) b->unsubscribe(*token);
            return;
        }
        alive->outbound().send(make_notification("notifications/resources/updated", {{"uri", uri}}));
    });
    subscriptions.emplace(uri, *token);
    return Json::object();
}

// 2025-11-25: tools/list_changed on the session's own channel (stdout, or
// the HTTP session's GET stream) for as long as the connection lives.
void McpServer::follow_tool_list_changes(Connection& connection) const {
    auto token = std::make_shared<std::uint64_t>(0);
    *token = bus_->subscribe([token, connection = connection.weak_from_this(),
                              bus = std::weak_ptr<NotificationBus>(bus_)](const Change& change) {
        if (change.kind != Change::Kind::tools_list) return;
        auto alive = connection.lock();
        if (!alive) {
            if (auto b = bus.lock()) b->unsubscribe(*token);
            return;
        }
        alive->outbound().send(make_notification("notifications/tools/list_changed", Json::object()));
    });
}

std::size_t McpServer::open_subscriptions() {
    std::lock_guard lock(subscriptions_mutex_);
    return subscriptions_.size();
}

McpServer::~McpServer() {
    std::lock_guard lock(subscriptions_mutex_);
    for (const auto& [token, _] : subscriptions_)
        bus_->unsubscribe(token);
}

Json McpServer::initialize(Request& request) const {
    auto& connection = *request.connection;
    if (connection.legacy_initialized)
        throw ProtocolError(error_code::invalid_request, "This connection is already initialized.");
    const Json& p = request.params;
    auto version = p.find("protocolVersion");
    if (version == p.end() || !version->is_string())
        throw ProtocolError(error_code::invalid_params, "initialize needs params.protocolVersion as a string.");
    auto caps = p.find("capabilities");
    if (caps != p.end() && !caps->is_object())
        throw ProtocolError(error_code::invalid_params, "initialize params.capabilities must be an object.");
    {
        std::lock_guard lock(connection.legacy_mutex);
        connection.legacy_client_capabilities = caps != p.end() ? *caps : Json::object();
    }
    // Negotiation: answer the client's version when this host speaks it,
    // else the newest legacy version it does; the client decides whether to stay.
    connection.legacy_initialized = true;
    follow_tool_list_changes(connection);
    Json result = {{"protocolVersion", std::string(kLegacyVersion)},
                   {"capabilities", capabilities(Revision::legacy_2025_11_25)},
                   {"serverInfo", server_info_}};
    if (!identity_.instructions.empty()) result["instructions"] = identity_.instructions;
    return result;
}

Json McpServer::discover(const Request&) const {
    Json result = {{"supportedVersions", supported_versions()},
                   {"capabilities", capabilities(Revision::modern_2026_07_28)},
                   {"ttlMs", limits_.tools_list_ttl_ms},
                   {"cacheScope", "public"}};
    if (!identity_.instructions.empty()) result["instructions"] = identity_.instructions;
    return result;
}

// 2026-07-28 lists carry caching hints. Most are the same for every caller:
// the registry is frozen at start and nothing in them is per user.
Json McpServer::cacheable(const Request& request, Json result, bool per_token) const {
    if (request.revision == Revision::modern_2026_07_28) {
        result["ttlMs"] = limits_.tools_list_ttl_ms;
        result["cacheScope"] = per_token ? "private" : "public";
    }
    return result;
}

// A verified token sees only the tools its scopes let it call (the same
// scope_refusal a call meets); the list is then its own, and says so in
// cacheScope. Its cursors carry which tools it holds, so a cursor of
// another token's list is refused rather than read at the wrong offset.
Json McpServer::list_tools(const Request& request) const {
    const auto listing = disclosure_.listing();
    const auth::Principal& principal = request.connection->principal();
    if (principal.kind != "token" || !listing->scoped)
        return cacheable(request, list_page(request, listing->tools, "tools", listing->fingerprint, limits_.page_size));
    std::vector<const plugins::Tool*> callable;
    callable.reserve(listing->tools.size());
    std::string held;
    for (const plugins::Tool* tool : listing->tools)
        if (!scope_refusal(*tool, principal)) {
            callable.push_back(tool);
            held += tool->name;
            held += '\n';
        }
    const std::string fingerprint =
        listing->fingerprint + "-" + std::to_string(std::hash<std::string>{}(held)&0xffffffffu);
    return cacheable(request, list_page(request, callable, "tools", fingerprint, limits_.page_size), true);
}

void McpServer::apply_exposure(const std::set<std::string>& on_demand_families,
                               const std::map<std::string, bool>& tool_on_demand) {
    if (disclosure_.apply(on_demand_families, tool_on_demand)) bus_->publish({Change::Kind::tools_list, {}});
}

Json McpServer::list_resources(const Request& request) const {
    return cacheable(request, list_page(request, registry_.resources(), "resources", registry_.resources_fingerprint(),
                                        limits_.page_size));
}

Json McpServer::list_resource_templates(const Request& request) const {
    return cacheable(request, list_page(request, registry_.resource_templates(), "resourceTemplates",
                                        registry_.resource_templates_fingerprint(), limits_.page_size));
}

Json McpServer::list_prompts(const Request& request) const {
    return cacheable(request, list_page(request, registry_.prompts(), "prompts", registry_.prompts_fingerprint(),
                                        limits_.page_size));
}

Json McpServer::set_log_level(Request& request) const {
    auto level = request.params.find("level");
    std::optional<int> parsed;
    if (level != request.params.end() && level->is_string()) parsed = parse_log_level(level->get<std::string>());
    if (!parsed)
        throw ProtocolError(error_code::invalid_params,
                            "logging/setLevel needs params.level, one of debug, info, notice, warning, error, "
                            "critical, alert, emergency.");
    request.connection->legacy_log_level = *parsed;
    return Json::object();
}

} // namespace gatehouse::protocol
