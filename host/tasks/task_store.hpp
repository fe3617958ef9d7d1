#pragma once

#include "config/config.hpp"
#include "state/notification_bus.hpp"
#include "state/state_backend.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::tasks {

using Json = nlohmann::json;

// The Tasks extension's identifier: in a request's client capabilities, and
// in the server's.
inline constexpr const char* kExtension = "io.modelcontextprotocol/tasks";

enum class Status { working, input_required, completed, failed, cancelled };
const char* status_name(Status status);
bool terminal(Status status);

// One task as the state backend keeps it (`task/<id>`): everything another
// instance needs to answer tasks/get, take tasks/update or tasks/cancel, and
// run the task's next round.
struct TaskRecord {
    std::string id;
    std::string owner; // the principal's owner key: every task operation checks it
    std::string tool;  // the published name
    Status status = Status::working;
    std::string status_message;
    std::int64_t created_ms = 0; // Unix epoch milliseconds
    std::int64_t updated_ms = 0;
    std::uint64_t ttl_ms = 0;
    std::uint64_t poll_ms = 0;
    Json result;                          // completed: the CallToolResult
    Json error;                           // failed: the JSON-RPC error
    Json input_requests = Json::object(); // input_required: outstanding, by the task's own keys
    Json plugin_keys = Json::object();    // task key -> the key the plugin asked under
    Json answers = Json::object();        // plugin key -> the client's answer, for the next round
    std::string plugin_state;             // the plugin's requestState for the next round
    std::uint32_t round = 0;              // rounds that asked so far: task keys are unique with it
    Json arguments = Json::object();      // as the client sent them, session handle included
    std::string revision;                 // of the request that created it
    std::string traceparent;              // its span, the parent of each round's
    std::string tracestate;
    Json client_capabilities = Json::object();
    bool job = false; // a job handle (a client without the extension), not a Task
    bool cancel_requested = false;
    std::string runner; // the instance running a round now; empty: none runs
    std::int64_t lease_until_ms = 0;

    std::string to_text() const;
    // Nothing when the text is not a record (damaged, or another kind of key).
    static std::optional<TaskRecord> from_text(std::string_view text);

    // The Task as tasks/get and notifications/tasks show it (DetailedTask).
    Json detailed() const;
    // CreateTaskResult's fields: the Task without result, error or inputRequests.
    Json created() const;
};

std::int64_t now_ms();
// ISO 8601 in UTC with milliseconds ("2026-12-01T10:30:00.000Z").
std::string iso8601(std::int64_t epoch_ms);

// Task records in a state backend, owner-checked, with each principal's
// unfinished tasks counted; every change is published on the bus
// (Change::Kind::task_status) for subscriptions/listen. Thread-safe.
class TaskStore {
public:
    TaskStore(state::StateBackend& backend, std::shared_ptr<state::NotificationBus> bus,
              const config::TaskSettings& settings);

    // 128 random bits, hex: unguessable, so an id is never a way in.
    static std::string new_id();

    // Writes a new record, durably, before anyone is told its id. False when
    // its owner already has max_per_principal unfinished tasks. Throws
    // state::BackendError.
    bool create(const TaskRecord& record);

    // The live record of `owner` under `id`: nothing for an unknown id, an
    // expired one or another principal's (indistinguishable). A working
    // task whose host stopped renewing its lease is failed here, with the
    // reason. Throws state::BackendError.
    std::optional<TaskRecord> find(std::string_view id, std::string_view owner);

    // Applies `change` to the live record as one compare-and-set, retried
    // while another writer got in between; `change` answers false to leave
    // the record as it is. The record as written (or as it stands when
    // unchanged), or nothing when it is gone. A record that became terminal
    // leaves its owner's count, and joins its kept ones (keep_finished).
    // Throws state::BackendError.
    // `visible` false: a change no client sees (a lease renewed), so
    // lastUpdatedAt stays and nothing is published.
    std::optional<TaskRecord> update(std::string_view id, const std::function<bool(TaskRecord&)>& change,
                                     bool visible = true);

    // Tells the instance running `id` that the client cancelled it.
    void publish_cancel(std::string_view id);

    const config::TaskSettings& settings() const { return settings_; }
    state::NotificationBus& bus() { return *bus_; }

private:
    static std::string key(std::string_view id) { return "task/" + std::string(id); }
    static std::string owner_key(std::string_view owner) { return "task-owner/" + std::string(owner); }
    // The owner's finished tasks, oldest first, for the bound on what is kept.
    static std::string kept_key(std::string_view owner) { return "task-kept/" + std::string(owner); }
    std::chrono::milliseconds ttl_left(const TaskRecord& record) const;
    void publish(const TaskRecord& record);
    void forget_unfinished(const TaskRecord& record);
    // Lists a task that just finished among its owner's kept ones, and
    // forgets the oldest past max_kept_per_principal: results of up to
    // max_result_bytes each, kept for ttl_ms, are then bounded per principal
    // by count, not only by time.
    void keep_finished(const TaskRecord& record);
    bool unfinished(const std::string& id);

    state::StateBackend& backend_;
    std::shared_ptr<state::NotificationBus> bus_;
    const config::TaskSettings settings_;
};

} // namespace gatehouse::tasks
