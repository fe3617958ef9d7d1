#pragma once

#include "config/config.hpp"
#include "metrics/audit_log.hpp"
#include "metrics/metric_registry.hpp"
#include "metrics/trace_context.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gatehouse::metrics {

class SpanExporter;

// How one tool call ended, as metrics count it.
enum class CallOutcome { ok, tool_error, refused, input_required, task, protocol_error, timeout, cancelled };
std::string_view outcome_name(CallOutcome outcome);

// One tool call (or one round of a task) as the windows an operator reads
// see it: the counters, the audit line and the span. Views into what the
// caller holds for the duration of the call to Observability::tool_call.
struct CallRecord {
    const void* tool_key = nullptr; // the Tool it ran (its series are cached by it)
    std::string_view family;
    std::string_view tool;
    CallOutcome outcome = CallOutcome::ok;
    std::string_view code;          // the refusal's (refused, timeout); empty otherwise
    std::string_view error_message; // a protocol error's
    std::chrono::steady_clock::duration took{};
    std::chrono::system_clock::time_point started;
    std::string_view principal;      // owner key
    std::string_view principal_kind; // local | token
    std::string_view client_id;
    std::string_view store; // the gate session's, once the gate found one
    std::string_view user;
    std::string_view revision;
    std::string_view transport; // stdio | http
    std::string_view task_id;
    const nlohmann::json* request_id = nullptr;
    const nlohmann::json* arguments = nullptr; // audited only with audit.include_arguments
    const TraceContext* trace = nullptr;
};

// Any other answered request, for the request counters and its span.
struct RequestRecord {
    std::string_view method; // one the method table knows, else "unknown"
    std::string_view revision;
    bool error = false;
    int error_code = 0;
    std::chrono::system_clock::time_point started;
    std::chrono::steady_clock::duration took{};
    std::string_view transport;
    const nlohmann::json* request_id = nullptr;
    const TraceContext* trace = nullptr;
};

// What operators see of one host (docs/operations.md): its Prometheus
// metrics, the trace ids of its requests, its audit log and span export.
// One per host, shared by its rooms; thread-safe.
class Observability {
public:
    struct Settings {
        config::MetricsSettings metrics;
        config::AuditSettings audit;
        config::TracingSettings tracing;
        std::string service_name = "gatehouse";
        std::string service_version;
        std::string instance; // http.instance_name, when set
    };

    explicit Observability(Settings settings);
    ~Observability();

    TraceIds& trace_ids() { return ids_; }
    MetricRegistry& registry() { return registry_; }
    const config::MetricsSettings& metrics_settings() const { return settings_.metrics; }

    // The Prometheus text exposition of everything counted so far.
    std::string exposition() const { return registry_.render(); }

    void tool_call(const CallRecord& call);
    void request(const RequestRecord& request);
    // A tools/call that was not counted as a request elsewhere: counted here.
    void auth_failure(std::string_view reason);
    void rate_limited(std::string_view limit);
    void backend_error(std::string_view backend);
    void plugin_load_failures(std::size_t failures);
    void families_loaded(std::size_t families);

    // The audit file anew (SIGHUP); written lines are flushed first for tests.
    void reopen_audit();
    void flush_audit();

private:
    struct SeriesHandles {
        std::array<Counter*, 8> outcomes{};
        Histogram* duration = nullptr;
    };
    struct ToolSeries {
        SeriesHandles handles;
        // Whose they are: a Tool's address may be another's after its
        // family listed anew.
        std::string family, tool;
    };
    static constexpr std::size_t kMaxCachedTools = 8192;
    SeriesHandles series_of(const CallRecord& call);
    void audit(const CallRecord& call);

    Settings settings_;
    TraceIds ids_;
    MetricRegistry registry_;
    CounterFamily& requests_;
    CounterFamily& tool_calls_;
    CounterFamily& refusals_;
    HistogramFamily& durations_;
    CounterFamily& auth_failures_;
    CounterFamily& rate_limited_;
    CounterFamily& backend_errors_;
    Counter& plugin_load_failures_;
    Counter& audit_dropped_;
    Counter& audit_failed_;
    Counter& spans_dropped_;
    Counter& span_export_failures_;
    std::atomic<std::size_t> families_{0};
    mutable std::shared_mutex series_mutex_;
    std::unordered_map<const void*, ToolSeries> series_;
    std::unique_ptr<AuditLog> audit_log_;
    std::unique_ptr<SpanExporter> spans_;
};

// The process's own figures the Prometheus client libraries export by
// convention (process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds, process_start_time_seconds), read from /proc on scrape.
void add_process_metrics(MetricRegistry& registry);

} // namespace gatehouse::metrics
