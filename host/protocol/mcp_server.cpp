#include "protocol/mcp_server.hpp"

#include "mrtr/state_keys.hpp"
#include "protocol/list_cursor.hpp"
#include "protocol/list_page.hpp"
#include "protocol/log_level.hpp"
#include "limits/local_buckets.hpp"
#include "metrics/log_context.hpp"
#include "protocol/call_outcome.hpp"
#include "protocol/deferred_answer.hpp"
#include "protocol/json_writer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <set>
#include <vector>
#include <string_view>

namespace gatehouse::protocol {

// Keys looked up by length, not measured with strlen at every member compared.
using namespace std::string_view_literals;

namespace {

constexpr std::initializer_list<Revision> kBoth = {Revision::legacy_2025_11_25, Revision::modern_2026_07_28};
constexpr std::initializer_list<Revision> kLegacy = {Revision::legacy_2025_11_25};
constexpr std::initializer_list<Revision> kModern = {Revision::modern_2026_07_28};

Json server_info(const config::ServerIdentity& identity) {
    Json info = {{"name", identity.name}, {"version", identity.version}};
    if (!identity.title.empty()) info["title"] = identity.title;
    return info;
}

} // namespace

McpServer::McpServer(const plugins::LiveRegistry& registry, const gate::GatePipeline& gate,
                     config::ServerIdentity identity, config::Limits limits, RequestPool& pool, ServerOptions options)
    : registry_(registry), identity_(std::move(identity)), limits_(limits), pool_(pool), host_(options.host),
      observability_(options.observability), server_info_(server_info(identity_)),
      identity_meta_(written_json(encode(Json{{meta_key::server_info, server_info_}}))),
      modern_result_members_("\"_meta\":" + std::string(*written_text(identity_meta_)) +
                             ",\"resultType\":\"complete\""),
      rate_limiter_(std::move(options.rate_limits), std::move(options.rate_buckets)),
      input_rounds_(options.state_sealer ? std::move(options.state_sealer)
                                         : mrtr::make_request_state_sealer(options.input_requests, identity_.name),
                    std::chrono::milliseconds(options.input_requests.client_timeout_ms)),
      disclosure_(registry, options.tasks.enabled && tasks::TaskCalls::offers_jobs(*registry.current())),
      decoder_(registry, disclosure_, options.host,
               options.observability ? &options.observability->trace_ids() : nullptr),
      tool_call_({gate, decoder_, disclosure_, rate_limiter_, input_rounds_, options.sessions},
                 limits::ArgumentBounds{limits_.max_string_bytes, limits_.max_array_items}),
      resource_read_(registry, gate, input_rounds_), prompt_get_(registry, gate, input_rounds_),
      completion_(registry, gate),
      subscriptions_(
          options.bus ? options.bus : std::make_shared<NotificationBus>(),
          [this, tasks = options.tasks.enabled] { return capabilities(Revision::modern_2026_07_28, tasks); },
          server_info_, limits.max_in_flight),
      own_task_state_(options.task_state ? nullptr : state::make_memory_backend()),
      task_store_(std::make_unique<tasks::TaskStore>(options.task_state ? *options.task_state : *own_task_state_,
                                                     subscriptions_.shared_bus(), options.tasks)),
      task_runner_(std::make_unique<tasks::TaskRunner>(*task_store_, std::string(), pool.stack_bytes())),
      tasks_(std::make_unique<tasks::TaskCalls>(registry, tool_call_, *task_store_, *task_runner_,
                                                options.task_buckets ? options.task_buckets
                                                                     : std::make_shared<limits::LocalBuckets>(),
                                                options.host, options.observability)),
      methods_(method_table()),
      scheduler_(
          pool, limits_,
          [this](Request& request, const MethodTable::Method& method) { return dispatch(request, method); },
          [this](const Json& id, Revision revision, Json result) { return finish(id, revision, std::move(result)); },
          [this](const CallScheduler::Admitted& call, const CallScheduler::Ending& ending) {
              observe_admitted(call, ending);
          }) {
    tool_call_.set_tasks(tasks_.get());
    subscriptions_.follow_tasks_with(
        [this](const Request& request, const Json& ids) { return tasks_->follow(request, ids); });
}

McpServer::~McpServer() {
    task_runner_->stop(std::chrono::milliseconds(0));
}

// Every method of both revisions, and how each runs. Resources, prompts and
// completions are there while some family serving declares them, as the
// capabilities say, or while an upstream family serves (answering empty
// lists until its server offers any): a configuration re-read or a server
// listing anew changes what the families offer.
MethodTable McpServer::method_table() {
    using Runs = MethodTable::Runs;
    MethodTable table;
    const auto while_served = [this](bool (plugins::ToolRegistry::*offers)() const) -> MethodTable::Offered {
        return [this, offers] {
            const auto registry = registry_.current();
            return ((*registry).*offers)() ||
                   std::any_of(registry->entries().begin(), registry->entries().end(),
                               [](const auto& e) { return e->plugin->upstream() != nullptr; });
        };
    };
    table.add("initialize", kLegacy, Runs::at_once, [this](Request& r) { return initialize(r); });
    table.add("ping", kLegacy, Runs::at_once, [](Request&) { return Json::object(); });
    table.add("logging/setLevel", kLegacy, Runs::at_once, [this](Request& r) { return set_log_level(r); });
    table.add("server/discover", kModern, Runs::at_once, [this](Request& r) { return discover(r); });
    table.add("subscriptions/listen", kModern, Runs::stream, nullptr);
    table.add("tools/list", kBoth, Runs::at_once, [this](Request& r) { return list_tools(r); });
    table.add("tools/call", kBoth, Runs::plugin_code, [this](Request& r) { return tool_call_.run(r); });
    if (task_store_->settings().enabled) {
        table.add("tasks/get", kModern, Runs::plugin_code, [this](Request& r) { return tasks_->get(r); });
        table.add("tasks/update", kModern, Runs::plugin_code, [this](Request& r) { return tasks_->update(r); });
        table.add("tasks/cancel", kModern, Runs::plugin_code, [this](Request& r) { return tasks_->cancel(r); });
    }
    const auto resources = while_served(&plugins::ToolRegistry::offers_resources);
    table.add(
        "resources/list", kBoth, Runs::at_once, [this](Request& r) { return list_resources(r); }, resources);
    table.add(
        "resources/templates/list", kBoth, Runs::at_once, [this](Request& r) { return list_resource_templates(r); },
        resources);
    table.add(
        "resources/read", kBoth, Runs::plugin_code, [this](Request& r) { return resource_read_.run(r); }, resources);
    table.add(
        "resources/subscribe", kLegacy, Runs::at_once,
        [this](Request& r) { return subscriptions_.follow_resource(r, true); }, resources);
    table.add(
        "resources/unsubscribe", kLegacy, Runs::at_once,
        [this](Request& r) { return subscriptions_.follow_resource(r, false); }, resources);
    const auto prompts = while_served(&plugins::ToolRegistry::offers_prompts);
    table.add(
        "prompts/list", kBoth, Runs::at_once, [this](Request& r) { return list_prompts(r); }, prompts);
    table.add(
        "prompts/get", kBoth, Runs::plugin_code, [this](Request& r) { return prompt_get_.run(r); }, prompts);
    table.add(
        "completion/complete", kBoth, Runs::plugin_code, [this](Request& r) { return completion_.run(r); },
        while_served(&plugins::ToolRegistry::offers_completions));
    return table;
}

Incoming McpServer::decode_text(const std::shared_ptr<Connection>& connection, std::string_view text) const {
    Incoming in;
    BoundedParse message = parse_bounded(text, limits_.max_json_depth);
    switch (message.outcome) {
    case BoundedParse::Outcome::parsed: return decode(connection, connection->principal(), std::move(message.value));
    case BoundedParse::Outcome::too_deep:
        in.error = make_error(nullptr, error_code::invalid_request,
                              "The message nests deeper than " + std::to_string(limits_.max_json_depth) +
                                  " levels; flatten it.");
        return in;
    case BoundedParse::Outcome::not_json: break;
    }
    in.error = make_error(nullptr, error_code::parse_error, "Parse error: " + message.error);
    return in;
}

Incoming McpServer::decode(const std::shared_ptr<Connection>& connection, const auth::Principal& sender, Json&& message,
                           TransportTrace transport_trace) const {
    return decoder_.read(*connection, sender, std::move(message), transport_trace);
}

ReadyCall McpServer::answer(const std::shared_ptr<Connection>& connection, Incoming&& incoming,
                            std::shared_ptr<Outbound> reply) {
    if (!reply) reply = connection->outbound_ptr();
    switch (incoming.kind) {
    case Incoming::Kind::invalid:
        if (observability_) {
            metrics::RequestRecord record;
            record.method = "invalid";
            record.revision = "unknown";
            record.error = true;
            record.error_code = incoming.error["error"].value("code", 0);
            observability_->request(record);
        }
        reply->send(incoming.error);
        return {};
    case Incoming::Kind::response:
        // The spec says never to reply to a response.
        if (!connection->client_requests().deliver(incoming.message))
            spdlog::debug("ignoring a response nothing waits for (id {})", incoming.message["id"].dump());
        return {};
    case Incoming::Kind::notification: on_notification(*connection, incoming.message); return {};
    case Incoming::Kind::request: break;
    }
    Request& request = incoming.request;
    metrics::LogScope scope(&request.trace);
    if (!incoming.error.is_null()) {
        observe(request, incoming.error);
        if (incoming.rejected)
            reply->reject(incoming.error);
        else
            reply->send(incoming.error);
        return {};
    }
    request.reply = std::move(reply);
    const MethodTable::Method* method = methods_.find(request.method, request.revision);
    if (!method) {
        const Json error = make_error(request.id, error_code::method_not_found,
                                      "Method not found: '" + request.method + "' (protocol revision " +
                                          std::string(revision_name(request.revision)) + ")");
        observe(request, error);
        request.reply->send(error);
        return {};
    }
    switch (method->runs) {
    case MethodTable::Runs::at_once: {
        const Json response = dispatch(request, *method);
        observe(request, response);
        request.reply->send(response);
        return {};
    }
    case MethodTable::Runs::stream:
        // Long-lived and threadless: it waits for changes, not for a worker.
        try {
            subscriptions_.open(connection, request);
            observe(request, Json::object());
        } catch (const ProtocolError& e) {
            const Json error = make_error(request.id, e.code(), e.what(), e.data());
            observe(request, error);
            request.reply->send(error);
        }
        return {};
    case MethodTable::Runs::plugin_code: return scheduler_.admit(connection, std::move(request), *method);
    }
    return {};
}

void McpServer::on_message(const std::shared_ptr<Connection>& connection, std::string_view text,
                           std::shared_ptr<Outbound> reply) {
    if (auto call = answer(connection, decode_text(connection, text), std::move(reply)))
        pool_.submit(std::move(call.run));
}

void McpServer::handle(const std::shared_ptr<Connection>& connection, Json&& message, std::shared_ptr<Outbound> reply) {
    if (auto call =
            answer(connection, decode(connection, connection->principal(), std::move(message)), std::move(reply)))
        pool_.submit(std::move(call.run));
}

void McpServer::on_notification(Connection& connection, const Json& message) {
    const auto& method = message["method"].get_ref<const std::string&>();
    if (method == "notifications/cancelled") {
        auto params = message.find("params");
        if (params != message.end() && params->is_object()) {
            auto id = params->find("requestId");
            if (id != params->end() && (id->is_string() || id->is_number_integer())) connection.cancel(*id);
        }
    } else if (method == "notifications/initialized") {
        // The handshake is already complete once initialize was answered.
    } else {
        spdlog::debug("ignoring notification {}", method);
    }
}

Json McpServer::dispatch(Request& request, const MethodTable::Method& method) const {
    Json response = finished(request, [&] { return method.handler(request); });
    // The answer comes later: finished the same way then.
    if (request.deferred)
        request.deferred->wrap(
            [this, &request](const DeferredAnswer::Below& below) { return finished(request, below); });
    return response;
}

Json McpServer::finished(Request& request, const std::function<Json()>& handled) const {
    try {
        Json result = handled();
        if (request.deferred) return {};
        return finish(request.id, request.revision, std::move(result));
    } catch (const ProtocolError& e) {
        return make_error(request.id, e.code(), e.what(), e.data());
    } catch (const std::exception& e) {
        spdlog::error("{} failed: {}", request.method, e.what());
        return make_error(request.id, error_code::internal_error, "Internal error while handling " + request.method);
    }
}

std::optional<std::string> McpServer::readiness() const {
    if (host_ && host_->family_state) {
        try {
            host_->family_state->probe();
        } catch (const state::BackendError& e) {
            return std::string("the state backend does not answer: ") + e.what();
        }
    }
    if (auto trouble = subscriptions_.shared_bus()->trouble())
        return "the notification bus does not answer: " + *trouble;
    return std::nullopt;
}

void McpServer::observe(const Request& request, const Json& response) const {
    if (!observability_) return;
    const auto error = response.find("error"sv);
    const bool failed = error != response.end();
    // Label values come from the method table, never from what a client sent.
    const std::string_view method =
        methods_.find(request.method, request.revision) ? std::string_view(request.method) : "unknown";
    observability_->request({method, revision_name(request.revision), failed, failed ? error->value("code", 0) : 0,
                             request.received_at, std::chrono::steady_clock::now() - request.received,
                             request.connection ? request.connection->transport : "", &request.id, &request.trace});
}

void McpServer::observe_admitted(const CallScheduler::Admitted& call, const CallScheduler::Ending& ending) const {
    if (!observability_) return;
    const auto took = std::chrono::steady_clock::now() - call.received;
    const std::string_view revision = revision_name(call.revision);
    const Json* error = nullptr;
    if (ending.response)
        if (auto it = ending.response->find("error"sv); it != ending.response->end()) error = &*it;
    const int error_code = error ? error->value("code", 0) : 0;
    observability_->request({call.method, revision, error != nullptr || !ending.response, error_code, call.received_at,
                             took, call.transport, &call.id, &call.trace});
    if (call.method != "tools/call" || !call.tool) return;
    const CallVerdict verdict = call_verdict(ending.response, ending.timed_out);
    const auto [store, user] = call.findings ? call.findings->session() : std::pair<std::string, std::string>();
    metrics::CallRecord record;
    record.tool_key = call.tool;
    record.family = call.tool->family;
    record.tool = call.tool->name;
    record.outcome = verdict.outcome;
    record.code = verdict.code;
    record.error_message = verdict.message;
    record.took = took;
    record.started = call.received_at;
    record.principal = call.owner;
    record.principal_kind = call.principal.kind;
    record.client_id = call.principal.client_id;
    record.store = store;
    record.user = user;
    record.revision = revision;
    record.transport = call.transport;
    record.request_id = &call.id;
    record.arguments = ending.arguments;
    record.trace = &call.trace;
    observability_->tool_call(record);
    // Counted from the host's own refusal: a result of the same shape from a
    // family or an upstream names no limit of this host.
    if (call.findings)
        if (const std::string limit = call.findings->rate_limit(); !limit.empty()) observability_->rate_limited(limit);
}

Json McpServer::finish(const Json& id, Revision revision, Json result) const {
    // A plugin's result passed on as the text it wrote (ToolCall::result_of):
    // the answer is written around it, with what a 2026-07-28 result adds.
    if (const auto text = written_text(result))
        return written_result(id, *text, revision == Revision::modern_2026_07_28 ? modern_result_members_ : "");
    if (revision == Revision::modern_2026_07_28) {
        if (!result.contains("resultType"sv)) result["resultType"] = "complete";
        if (!result.contains("_meta"sv))
            result["_meta"] = identity_meta_;
        else
            result["_meta"][meta_key::server_info] = server_info_;
    }
    return make_result(id, std::move(result));
}

Json McpServer::capabilities(Revision revision, bool tasks) const {
    // List changes and resource updates reach 2026-07-28 clients on
    // subscriptions/listen, and a 2025-11-25 session on its own channel: a
    // configuration re-read changes the tool list, an upstream family that
    // joins, leaves or lists anew any list.
    const bool modern = revision == Revision::modern_2026_07_28;
    Json caps = {{"tools", {{"listChanged", true}}}, {"logging", Json::object()}};
    const auto registry = registry_.current();
    // resources/subscribe (2025-11-25) and subscriptions/listen (2026-07-28)
    // both deliver resource updates.
    if (registry->offers_resources()) caps["resources"] = {{"listChanged", true}, {"subscribe", true}};
    if (registry->offers_prompts()) caps["prompts"] = {{"listChanged", true}};
    if (registry->offers_completions()) caps["completions"] = Json::object();
    if (modern && tasks) caps["extensions"][tasks::kExtension] = Json::object();
    return caps;
}

Json McpServer::initialize(Request& request) {
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
    connection.record_handshake([&connection] { connection.legacy_initialized = false; });
    subscriptions_.follow_list_changes(connection);
    Json result = {{"protocolVersion", std::string(kLegacyVersion)},
                   {"capabilities", capabilities(Revision::legacy_2025_11_25, false)},
                   {"serverInfo", server_info_}};
    if (!identity_.instructions.empty()) result["instructions"] = identity_.instructions;
    return result;
}

Json McpServer::discover(const Request&) const {
    Json result = {{"supportedVersions", supported_versions()},
                   {"capabilities", capabilities(Revision::modern_2026_07_28, task_store_->settings().enabled)},
                   {"ttlMs", limits_.tools_list_ttl_ms},
                   {"cacheScope", "public"}};
    if (!identity_.instructions.empty()) result["instructions"] = identity_.instructions;
    return result;
}

// 2026-07-28 lists carry caching hints. Most are the same for every caller:
// nothing in them is per user, and a change of the registry is announced.
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
    const auth::Principal& principal = request.principal;
    const bool jobs = request.revision == Revision::legacy_2025_11_25 && task_store_->settings().enabled;
    // Each tool as the listing wrote it once, but for one case: a 2025-11-25
    // client calling a tool that runs only as a task gets a job handle
    // (tasks::TaskCalls), not the tool's output, so its outputSchema would
    // promise structured content the handle cannot match, and clients that
    // check results against it (the official SDK does) throw the handle
    // away. The job's result, from job_result, is the tool's own.
    const auto entry = [&](std::size_t i) -> Json {
        const plugins::Tool& tool = *listing->tools[i];
        if (jobs)
            if (const plugins::Tool* registered = listing->registry->find(tool.name);
                registered && registered->task_support == plugins::TaskSupport::required) {
                Json without = tool.listing;
                without.erase("outputSchema");
                return without;
            }
        return listing->written[i];
    };
    if (principal.kind != "token" || !listing->scoped)
        return cacheable(request, list_page_of(request, listing->tools.size(), entry, "tools", listing->fingerprint,
                                               limits_.page_size));
    std::vector<std::size_t> callable;
    callable.reserve(listing->tools.size());
    std::string held;
    for (std::size_t i = 0; i < listing->tools.size(); ++i)
        if (!scope_refusal(*listing->tools[i], principal)) {
            callable.push_back(i);
            held += listing->tools[i]->name;
            held += '\n';
        }
    const std::string fingerprint =
        listing->fingerprint + "-" + std::to_string(std::hash<std::string>{}(held)&0xffffffffu);
    const auto callable_entry = [&](std::size_t k) { return entry(callable[k]); };
    return cacheable(
        request, list_page_of(request, callable.size(), callable_entry, "tools", fingerprint, limits_.page_size), true);
}

void McpServer::apply_exposure(const std::set<std::string>& on_demand_families,
                               const ToolDisclosure::ToolExposure& tool_on_demand) {
    if (disclosure_.apply(on_demand_families, tool_on_demand)) bus().publish({Change::Kind::tools_list, {}});
}

void McpServer::registry_changed(const plugins::RegistryChanges& changes) {
    if (disclosure_.refresh()) bus().publish({Change::Kind::tools_list, {}});
    if (changes.prompts) bus().publish({Change::Kind::prompts_list, {}});
    if (changes.resources) bus().publish({Change::Kind::resources_list, {}});
}

Json McpServer::list_resources(const Request& request) const {
    const auto registry = registry_.current();
    return cacheable(request, list_page(request, registry->resources(), "resources", registry->resources_fingerprint(),
                                        limits_.page_size));
}

Json McpServer::list_resource_templates(const Request& request) const {
    const auto registry = registry_.current();
    return cacheable(request, list_page(request, registry->resource_templates(), "resourceTemplates",
                                        registry->resource_templates_fingerprint(), limits_.page_size));
}

Json McpServer::list_prompts(const Request& request) const {
    const auto registry = registry_.current();
    return cacheable(request, list_page(request, registry->prompts(), "prompts", registry->prompts_fingerprint(),
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
    Connection& connection = *request.connection;
    const int before = connection.legacy_log_level.exchange(*parsed);
    connection.record_handshake([&connection, before] { connection.legacy_log_level = before; });
    return Json::object();
}

// What a 2025-11-25 connection negotiated, as a record another instance
// can resume from.
Json McpServer::legacy_record(Connection& connection) {
    std::lock_guard lock(connection.legacy_mutex);
    Json subscriptions = Json::array();
    for (const auto& [uri, _] : connection.legacy_resource_subscriptions)
        subscriptions.push_back(uri);
    return {{"initialized", connection.legacy_initialized.load()},
            {"logLevel", connection.legacy_log_level.load()},
            {"capabilities", connection.legacy_client_capabilities},
            {"subscriptions", std::move(subscriptions)}};
}

// Brings this instance's copy of a connection to what its record says
// (written by any instance), following list changes and resources as the
// record does. A damaged record changes nothing.
void McpServer::resume_legacy(Connection& connection, const Json& record) {
    if (!record.is_object()) return;
    const auto log_level = record.find("logLevel");
    if (log_level != record.end() && log_level->is_number_integer())
        connection.legacy_log_level = log_level->get<int>();
    const auto caps = record.find("capabilities");
    if (caps != record.end() && caps->is_object()) {
        std::lock_guard lock(connection.legacy_mutex);
        connection.legacy_client_capabilities = *caps;
    }
    const auto initialized = record.find("initialized");
    if (initialized != record.end() && initialized->is_boolean() && initialized->get<bool>() &&
        !connection.legacy_initialized.exchange(true))
        subscriptions_.follow_list_changes(connection);
    std::set<std::string> uris;
    if (const auto list = record.find("subscriptions"); list != record.end() && list->is_array())
        for (const auto& uri : *list)
            if (uri.is_string()) uris.insert(uri.get<std::string>());
    subscriptions_.follow_resources(connection, uris);
}

} // namespace gatehouse::protocol
