#include "tasks/task_store.hpp"

#include "crypto/bytes.hpp"
#include "crypto/random_bytes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace gatehouse::tasks {

namespace {

constexpr int kMaxCasAttempts = 64;

std::optional<Status> status_named(std::string_view name) {
    for (Status s : {Status::working, Status::input_required, Status::completed, Status::failed, Status::cancelled})
        if (name == status_name(s)) return s;
    return std::nullopt;
}

} // namespace

const char* status_name(Status status) {
    switch (status) {
    case Status::working: return "working";
    case Status::input_required: return "input_required";
    case Status::completed: return "completed";
    case Status::failed: return "failed";
    case Status::cancelled: return "cancelled";
    }
    return "failed";
}

bool terminal(Status status) {
    return status == Status::completed || status == Status::failed || status == Status::cancelled;
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string iso8601(std::int64_t epoch_ms) {
    const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[40];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03dZ", static_cast<int>(epoch_ms % 1000));
    return std::string(text, n) + millis;
}

std::string TaskRecord::to_text() const {
    Json j = {{"id", id},
              {"owner", owner},
              {"tool", tool},
              {"status", status_name(status)},
              {"createdMs", created_ms},
              {"updatedMs", updated_ms},
              {"ttlMs", ttl_ms},
              {"pollMs", poll_ms},
              {"round", round},
              {"arguments", arguments},
              {"revision", revision},
              {"clientCapabilities", client_capabilities},
              {"job", job},
              {"cancel", cancel_requested},
              {"runner", runner},
              {"leaseUntilMs", lease_until_ms}};
    if (!status_message.empty()) j["statusMessage"] = status_message;
    if (!traceparent.empty()) j["traceparent"] = traceparent;
    if (!tracestate.empty()) j["tracestate"] = tracestate;
    if (!result.is_null()) j["result"] = result;
    if (!error.is_null()) j["error"] = error;
    if (!input_requests.empty()) j["inputRequests"] = input_requests;
    if (!plugin_keys.empty()) j["pluginKeys"] = plugin_keys;
    if (!answers.empty()) j["answers"] = answers;
    if (!plugin_state.empty()) j["pluginState"] = plugin_state;
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<TaskRecord> TaskRecord::from_text(std::string_view text) {
    const Json j = Json::parse(text, nullptr, false);
    if (!j.is_object()) return std::nullopt;
    try {
        TaskRecord r;
        r.id = j.at("id").get<std::string>();
        r.owner = j.at("owner").get<std::string>();
        r.tool = j.at("tool").get<std::string>();
        const auto status = status_named(j.at("status").get<std::string>());
        if (!status) return std::nullopt;
        r.status = *status;
        r.status_message = j.value("statusMessage", std::string());
        r.created_ms = j.at("createdMs").get<std::int64_t>();
        r.updated_ms = j.at("updatedMs").get<std::int64_t>();
        r.ttl_ms = j.at("ttlMs").get<std::uint64_t>();
        r.poll_ms = j.at("pollMs").get<std::uint64_t>();
        r.round = j.value("round", 0u);
        r.result = j.value("result", Json());
        r.error = j.value("error", Json());
        r.input_requests = j.value("inputRequests", Json::object());
        r.plugin_keys = j.value("pluginKeys", Json::object());
        r.answers = j.value("answers", Json::object());
        r.plugin_state = j.value("pluginState", std::string());
        r.arguments = j.value("arguments", Json::object());
        r.revision = j.value("revision", std::string());
        r.traceparent = j.value("traceparent", std::string());
        r.tracestate = j.value("tracestate", std::string());
        r.client_capabilities = j.value("clientCapabilities", Json::object());
        r.job = j.value("job", false);
        r.cancel_requested = j.value("cancel", false);
        r.runner = j.value("runner", std::string());
        r.lease_until_ms = j.value("leaseUntilMs", std::int64_t{0});
        return r;
    } catch (const Json::exception&) {
        return std::nullopt;
    }
}

Json TaskRecord::created() const {
    Json task = {{"taskId", id},
                 {"status", status_name(status)},
                 {"createdAt", iso8601(created_ms)},
                 {"lastUpdatedAt", iso8601(updated_ms)},
                 {"ttlMs", ttl_ms},
                 {"pollIntervalMs", poll_ms}};
    if (!status_message.empty()) task["statusMessage"] = status_message;
    return task;
}

Json TaskRecord::detailed() const {
    Json task = created();
    switch (status) {
    case Status::input_required: task["inputRequests"] = input_requests; break;
    case Status::completed: task["result"] = result; break;
    case Status::failed: task["error"] = error; break;
    default: break;
    }
    return task;
}

TaskStore::TaskStore(state::StateBackend& backend, std::shared_ptr<state::NotificationBus> bus,
                     const config::TaskSettings& settings)
    : backend_(backend), bus_(std::move(bus)), settings_(settings) {}

std::string TaskStore::new_id() {
    return crypto::hex(crypto::random_bytes(16));
}

std::chrono::milliseconds TaskStore::ttl_left(const TaskRecord& record) const {
    const std::int64_t left = record.created_ms + static_cast<std::int64_t>(record.ttl_ms) - now_ms();
    return std::chrono::milliseconds(std::max<std::int64_t>(left, 1));
}

// A listed task still counts while it is live and not finished; a working
// one whose host stopped is failed on the way (find), so it stops counting.
bool TaskStore::unfinished(const std::string& id) {
    const auto text = backend_.get(key(id));
    if (!text) return false;
    auto record = TaskRecord::from_text(*text);
    if (!record || terminal(record->status)) return false;
    if (record->status == Status::working && record->lease_until_ms < now_ms()) {
        find(id, record->owner);
        return false;
    }
    return true;
}

bool TaskStore::create(const TaskRecord& record) {
    // The record before its place in the index: a create that finds the
    // index full prunes it of ids whose records are not unfinished, and
    // would drop this one, uncounted, if its record were not there yet.
    backend_.put(key(record.id), record.to_text(), ttl_left(record));
    const auto withdraw = [&] {
        try {
            backend_.erase(key(record.id));
        } catch (const state::BackendError&) {
            // It expires with its TTL.
        }
    };
    const std::string index_key = owner_key(record.owner);
    const auto index_ttl = std::chrono::milliseconds(settings_.ttl_ms);
    try {
        for (int attempt = 0;; ++attempt) {
            if (attempt == kMaxCasAttempts) throw state::BackendError("the task index kept changing under this host");
            const auto before = backend_.get(index_key);
            Json ids = before ? Json::parse(*before, nullptr, false) : Json::array();
            if (!ids.is_array()) ids = Json::array();
            if (ids.size() >= settings_.max_per_principal) {
                // Full: what finished or expired since it was listed leaves first.
                Json live = Json::array();
                for (const auto& id : ids)
                    if (id.is_string() && unfinished(id.get<std::string>())) live.push_back(id);
                ids = std::move(live);
                if (ids.size() >= settings_.max_per_principal) {
                    withdraw();
                    return false;
                }
            }
            ids.push_back(record.id);
            // No index yet: the first is added only where none is, so of two
            // first creates at once one goes round again.
            if (before ? backend_.replace(index_key, *before, ids.dump(), index_ttl)
                       : backend_.add(index_key, ids.dump(), index_ttl))
                break;
        }
    } catch (...) {
        withdraw();
        throw;
    }
    publish(record);
    return true;
}

void TaskStore::forget_unfinished(const TaskRecord& record) {
    const std::string index_key = owner_key(record.owner);
    for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
        const auto before = backend_.get(index_key);
        if (!before) return;
        Json ids = Json::parse(*before, nullptr, false);
        if (!ids.is_array()) return;
        const auto it = std::find(ids.begin(), ids.end(), Json(record.id));
        if (it == ids.end()) return;
        ids.erase(it);
        if (backend_.replace(index_key, *before, ids.dump(), std::chrono::milliseconds(settings_.ttl_ms))) return;
    }
}

void TaskStore::keep_finished(const TaskRecord& record) {
    const std::string list_key = kept_key(record.owner);
    const auto list_ttl = std::chrono::milliseconds(settings_.ttl_ms);
    for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
        const auto before = backend_.get(list_key);
        Json ids = before ? Json::parse(*before, nullptr, false) : Json::array();
        if (!ids.is_array()) ids = Json::array();
        ids.push_back(record.id);
        std::vector<std::string> forgotten;
        while (ids.size() > settings_.max_kept_per_principal) {
            if (ids.front().is_string()) forgotten.push_back(ids.front().get<std::string>());
            ids.erase(ids.begin());
        }
        if (!(before ? backend_.replace(list_key, *before, ids.dump(), list_ttl)
                     : backend_.add(list_key, ids.dump(), list_ttl)))
            continue;
        // Only finished tasks of this owner were ever listed here.
        for (const auto& id : forgotten)
            backend_.erase(key(id));
        if (!forgotten.empty())
            spdlog::info("tasks: a principal has more than {} finished tasks kept; the {} oldest forgotten",
                         settings_.max_kept_per_principal, forgotten.size());
        return;
    }
}

std::optional<TaskRecord> TaskStore::find(std::string_view id, std::string_view owner) {
    if (id.empty() || id.size() > 128) return std::nullopt;
    const auto text = backend_.get(key(id));
    if (!text) return std::nullopt;
    auto record = TaskRecord::from_text(*text);
    if (!record || record->owner != owner) return std::nullopt;
    if (record->status != Status::working || record->lease_until_ms >= now_ms()) return record;
    // Its host stopped (killed, or restarted) mid-round: no one will finish it.
    const std::string runner = record->runner;
    auto failed = update(id, [&](TaskRecord& r) {
        if (r.status != Status::working || r.lease_until_ms >= now_ms()) return false;
        r.status = Status::failed;
        r.error = {{"code", -32603},
                   {"message", "The host running this task stopped before it finished (instance '" + r.runner +
                                   "'); start the work again."}};
        r.status_message = r.error["message"];
        r.runner.clear();
        return true;
    });
    if (failed) spdlog::warn("task {} failed: its host ({}) stopped renewing it", std::string(id), runner);
    return failed;
}

std::optional<TaskRecord> TaskStore::update(std::string_view id, const std::function<bool(TaskRecord&)>& change,
                                            bool visible) {
    const std::string k = key(id);
    for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
        const auto before = backend_.get(k);
        if (!before) return std::nullopt;
        auto record = TaskRecord::from_text(*before);
        if (!record) return std::nullopt;
        const bool was_terminal = terminal(record->status);
        if (!change(*record)) return record;
        if (visible) record->updated_ms = std::max(now_ms(), record->updated_ms);
        if (!backend_.replace(k, *before, record->to_text(), ttl_left(*record))) continue;
        if (!was_terminal && terminal(record->status)) {
            // The record is written: the lists are kept best-effort, and
            // the change is published whatever becomes of them.
            try {
                forget_unfinished(*record);
                keep_finished(*record);
            } catch (const state::BackendError& e) {
                spdlog::warn("task {}: its owner's lists were not updated: {}", record->id, e.what());
            }
        }
        if (visible) publish(*record);
        return record;
    }
    throw state::BackendError("task " + std::string(id) + " kept changing under this host");
}

void TaskStore::publish(const TaskRecord& record) {
    if (record.job) return; // a job handle has no subscribers: its client has no notifications/tasks
    bus_->publish({state::Change::Kind::task_status, record.id,
                   record.detailed().dump(-1, ' ', false, Json::error_handler_t::replace)});
}

void TaskStore::publish_cancel(std::string_view id) {
    bus_->publish({state::Change::Kind::task_cancel, std::string(id), {}});
}

} // namespace gatehouse::tasks
