#pragma once

#include "metrics/observability.hpp"

#include "limits/bucket_store.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/request.hpp"
#include "protocol/tool_call.hpp"
#include "tasks/task_runner.hpp"
#include "tasks/task_store.hpp"

#include <memory>
#include <string>

namespace gatehouse::tasks {

// The Tasks extension as a client meets it: which tools/call become tasks
// and how they start (ToolCall hands them here after the gate), tasks/get,
// tasks/update and tasks/cancel, and which task ids a subscriptions/listen
// may follow. Every operation is the task's principal's only: another's id
// is an unknown one. Thread-safe.
class TaskCalls final : public protocol::TaskStarter {
public:
    TaskCalls(const plugins::LiveRegistry& registry, protocol::ToolCall& tool_call, TaskStore& store,
              TaskRunner& runner, std::shared_ptr<limits::BucketStore> poll_buckets, const plugins::HostServices* host,
              metrics::Observability* observability = nullptr);

    bool runs_as_task(const protocol::Request& request, const plugins::Tool& tool) const override;
    bool asks_first(const protocol::Request& request, const plugins::Tool& tool) const override;
    Json start(protocol::Request& request, Start start) override;
    Json answer_job(const plugins::Tool& tool, const Json& arguments, protocol::Request& request) override;

    // Whether some tool runs only as a task: then clients without the
    // extension (2025-11-25) get job handles, and the job tools are offered.
    static bool offers_jobs(const plugins::ToolRegistry& registry);

    // The methods; each throws ProtocolError as the extension specifies
    // (-32021 without the extension, -32602 for an unknown task).
    Json get(protocol::Request& request);
    Json update(protocol::Request& request);
    Json cancel(protocol::Request& request);

    // subscriptions/listen's notifications.taskIds: those of the caller's
    // tasks that exist, to follow. Throws ProtocolError.
    Json follow(const protocol::Request& request, const Json& task_ids);

    // Whether the request declared the extension in its capabilities.
    static bool declared(const protocol::Request& request);

private:
    static const TaskRecord& require(std::optional<TaskRecord>& found);
    std::string task_id(const protocol::Request& request) const;
    // tasks/get's pace: poll_burst at once, then one per pollIntervalMs.
    // Throws ProtocolError (POLLED_TOO_FAST) when it came too soon.
    void pace(const std::string& id, const std::string& owner);
    // The same for the job tools: how long to wait, when it came too soon.
    // Each caller paces its own polls of an id: another's, of an id it
    // learnt, never spend the owner's.
    std::optional<std::uint64_t> too_soon(const std::string& id, const std::string& owner);
    // tasks/cancel and job_cancel: true when the task was still unfinished.
    bool cancel_task(const std::string& id, const std::string& owner);
    // Runs the task's next round on this host, as `principal`.
    // `registry`: the one `tool` is of, kept until the round has run.
    void submit_round(const std::string& id, const plugins::Tool& tool, const auth::Principal& principal,
                      std::shared_ptr<const plugins::ToolRegistry> registry);
    void round(RoundControl& control, const std::string& id, const plugins::Tool& tool,
               const auth::Principal& principal, const std::shared_ptr<const plugins::ToolRegistry>& registry);
    // Sets the status message of a task whose round this instance runs
    // (why it waits to run again, that it runs after all); a message only,
    // so a backend that does not answer changes nothing else.
    void say(const std::string& id, const std::string& message);
    // Counts, audits and exports one round as a tool call of its own.
    void observe_round(const protocol::Request& request, const plugins::Tool& tool,
                       const protocol::TaskRound& outcome) const;

    const plugins::LiveRegistry& registry_;
    protocol::ToolCall& tool_call_;
    TaskStore& store_;
    TaskRunner& runner_;
    std::shared_ptr<limits::BucketStore> poll_buckets_;
    const plugins::HostServices* host_;
    metrics::Observability* observability_;
    config::RateLimit poll_pace_;
};

} // namespace gatehouse::tasks
