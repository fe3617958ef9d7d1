#include "metrics/observability.hpp"

#include "metrics/json_text.hpp"
#include "metrics/span_exporter.hpp"

#include <gatehouse/plugin.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace gatehouse::metrics {

namespace {

// Tool latencies: a quick native tool takes tens of microseconds, a slow
// one minutes (limits.tool_timeout_ms is 120 s by default).
const std::vector<double> kDurationBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120};

constexpr std::array<std::string_view, 8> kOutcomeNames = {"ok",   "tool_error",     "refused", "input_required",
                                                           "task", "protocol_error", "timeout", "cancelled"};

std::uint64_t unix_ns(std::chrono::system_clock::time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

double seconds_of(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// A request id as a span and an audit line carry it: the client's own
// text, which JSON-RPC does not bound, cut past kMaxShownId bytes (at a
// character's start) with its length said. Each span and audit line waits
// in a queue bounded by count, so an id of megabytes on every call would
// have held that many megabytes per place in the queue.
constexpr std::size_t kMaxShownId = 256;

std::string id_text(const nlohmann::json* id) {
    if (!id || id->is_null()) return {};
    if (!id->is_string()) return id->dump();
    const auto& text = id->get_ref<const std::string&>();
    if (text.size() <= kMaxShownId) return text;
    std::size_t cut = kMaxShownId;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

// The semantic conventions' network.transport: stdio is a pipe.
std::string_view network_transport(std::string_view transport) {
    return transport == "stdio" ? "pipe" : "tcp";
}

// A request's span with what every request's carries (the MCP semantic
// conventions); tool calls and errors add theirs.
Span request_span(std::string name, std::string_view method, std::string_view revision, std::string_view transport,
                  const nlohmann::json* request_id, const TraceContext& trace,
                  std::chrono::system_clock::time_point started, std::chrono::steady_clock::duration took) {
    Span span;
    span.trace = trace;
    span.name = std::move(name);
    span.start_unix_ns = unix_ns(started);
    span.end_unix_ns = span.start_unix_ns +
                       static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    span.attributes = {{"mcp.method.name", std::string(method)},
                       {"mcp.protocol.version", std::string(revision)},
                       {"network.transport", std::string(network_transport(transport))}};
    if (const std::string id = id_text(request_id); !id.empty()) span.attributes.push_back({"jsonrpc.request.id", id});
    return span;
}

} // namespace

std::string_view outcome_name(CallOutcome outcome) {
    return kOutcomeNames[static_cast<std::size_t>(outcome)];
}

Observability::Observability(Settings settings)
    : settings_(std::move(settings)),
      requests_(registry_.add<CounterFamily>("gatehouse_requests_total",
                                             "JSON-RPC requests answered, by method, protocol revision and outcome "
                                             "(result or error).",
                                             std::vector<std::string>{"method", "revision", "outcome"})),
      tool_calls_(registry_.add<CounterFamily>(
          "gatehouse_tool_calls_total",
          "Tool calls by family, tool and outcome: ok, tool_error, refused (by the gate, a limit or the family; "
          "gatehouse_tool_refusals_total has the code), input_required, task (started as one), protocol_error, "
          "timeout, cancelled.",
          std::vector<std::string>{"family", "tool", "outcome"})),
      refusals_(registry_.add<CounterFamily>("gatehouse_tool_refusals_total",
                                             "Refused tool calls by family, tool and refusal code.",
                                             std::vector<std::string>{"family", "tool", "code"})),
      durations_(registry_.add<HistogramFamily>("gatehouse_tool_call_duration_seconds",
                                                "Time from admission to answer of tool calls, by family.",
                                                std::vector<std::string>{"family"}, kDurationBounds)),
      auth_failures_(registry_.add<CounterFamily>(
          "gatehouse_auth_failures_total",
          "HTTP requests refused by bearer-token authentication, by reason: missing, malformed, rejected, "
          "unavailable (the check could not run), throttled.",
          std::vector<std::string>{"reason"})),
      rate_limited_(registry_.add<CounterFamily>(
          "gatehouse_rate_limited_total",
          "Tool calls refused by rate_limits, by the limit that refused them (rate_limits, or a tool's own).",
          std::vector<std::string>{"limit"})),
      backend_errors_(
          registry_.add<CounterFamily>("gatehouse_backend_errors_total",
                                       "Failed operations of the state backend, by backend (sqlite, redis, memory).",
                                       std::vector<std::string>{"backend"})),
      plugin_load_failures_(registry_.counter(
          "gatehouse_plugin_load_failures_total",
          "Plugins and upstreams that failed to load, at start or on a re-read of upstreams (SIGHUP).")),
      audit_dropped_(registry_.counter("gatehouse_audit_lines_dropped_total",
                                       "Audit lines dropped because the writer's queue was full.")),
      audit_failed_(registry_.counter("gatehouse_audit_write_failures_total",
                                      "Audit lines lost because opening or writing the audit file failed.")),
      spans_dropped_(registry_.counter("gatehouse_spans_dropped_total",
                                       "Spans not exported: the queue was full or their export failed.")),
      span_export_failures_(registry_.counter("gatehouse_span_export_failures_total",
                                              "OTLP exports that failed (a batch of spans each).")) {
    const std::string abi = std::to_string(GH_ABI_VERSION_MAJOR) + "." + std::to_string(GH_ABI_VERSION_MINOR);
    registry_.add<ReadFamily>("gatehouse_build_info", "The running build: version and plugin ABI.",
                              std::vector<std::string>{"version", "abi"}, [this, abi] {
                                  return ReadFamily::Series{{{settings_.service_version, abi}, 1.0}};
                              });
    registry_.add<ReadFamily>("gatehouse_families_loaded", "Families (plugins) serving tools.",
                              std::vector<std::string>{}, [this] {
                                  return ReadFamily::Series{{{}, static_cast<double>(families_.load())}};
                              });
    add_process_metrics(registry_);

    const auto& audit = settings_.audit;
    if (!audit.file.empty())
        audit_log_ = std::make_unique<AuditLog>(
            audit.file, audit.max_queue,
            AuditLog::Counters{[this] { audit_dropped_.add(); }, [this] { audit_failed_.add(); }});
    const auto& tracing = settings_.tracing;
    if (!tracing.otlp_endpoint.empty()) {
        std::vector<Attribute> resource = {{"service.name", settings_.service_name},
                                           {"service.version", settings_.service_version},
                                           {"telemetry.sdk.name", std::string("gatehouse")},
                                           {"telemetry.sdk.language", std::string("cpp")}};
        if (!settings_.instance.empty()) resource.push_back({"service.instance.id", settings_.instance});
        spans_ = std::make_unique<SpanExporter>(parse_otlp_endpoint(tracing.otlp_endpoint), std::move(resource),
                                                settings_.service_version,
                                                std::chrono::milliseconds(tracing.export_timeout_ms), tracing.max_queue,
                                                SpanExporter::Counters{[this](std::size_t n) { spans_dropped_.add(n); },
                                                                       [this] { span_export_failures_.add(); }});
    }
}

Observability::~Observability() = default;

// The handles are copied out under the lock: another thread may replace the
// entry (a Tool's address reused after a new listing) at any time.
Observability::SeriesHandles Observability::series_of(const CallRecord& call) {
    {
        std::shared_lock lock(series_mutex_);
        if (auto it = series_.find(call.tool_key);
            it != series_.end() && it->second.tool == call.tool && it->second.family == call.family)
            return it->second.handles;
    }
    ToolSeries series;
    series.family = call.family;
    series.tool = call.tool;
    for (std::size_t i = 0; i < kOutcomeNames.size(); ++i)
        series.handles.outcomes[i] = &tool_calls_.with({call.family, call.tool, kOutcomeNames[i]});
    series.handles.duration = &durations_.with({call.family});
    std::unique_lock lock(series_mutex_);
    // Addresses of tools listed long ago are forgotten in one go; the
    // series they name stay in the registry.
    if (series_.size() >= kMaxCachedTools && !series_.count(call.tool_key)) series_.clear();
    return series_.insert_or_assign(call.tool_key, std::move(series)).first->second.handles;
}

void Observability::tool_call(const CallRecord& call) {
    const SeriesHandles series = series_of(call);
    series.outcomes[static_cast<std::size_t>(call.outcome)]->add();
    series.duration->observe(seconds_of(call.took));
    if (!call.code.empty() && (call.outcome == CallOutcome::refused || call.outcome == CallOutcome::timeout))
        refusals_.with({call.family, call.tool, call.code}).add();
    if (audit_log_) audit(call);
    if (spans_ && call.trace && call.trace->sampled()) {
        Span span = request_span("tools/call " + std::string(call.tool), "tools/call", call.revision, call.transport,
                                 call.request_id, *call.trace, call.started, call.took);
        span.attributes.push_back({"gen_ai.operation.name", std::string("execute_tool")});
        span.attributes.push_back({"gen_ai.tool.name", std::string(call.tool)});
        span.attributes.push_back({"gatehouse.family", std::string(call.family)});
        span.attributes.push_back({"gatehouse.outcome", std::string(outcome_name(call.outcome))});
        if (!call.task_id.empty()) span.attributes.push_back({"gatehouse.task.id", std::string(call.task_id)});
        if (call.outcome != CallOutcome::ok && call.outcome != CallOutcome::input_required &&
            call.outcome != CallOutcome::task) {
            span.error = true;
            const std::string type =
                call.code.empty() ? std::string(outcome_name(call.outcome)) : std::string(call.code);
            span.attributes.push_back({"error.type", type});
            span.status_message = call.error_message.empty() ? type : std::string(call.error_message);
        }
        spans_->add(std::move(span));
    }
}

void Observability::request(const RequestRecord& request) {
    requests_.with({request.method, request.revision, request.error ? "error" : "result"}).add();
    // A tool call's span is its call's (tool_call), with the tool's attributes.
    if (spans_ && request.trace && request.trace->sampled() && request.method != "tools/call") {
        Span span = request_span(std::string(request.method), request.method, request.revision, request.transport,
                                 request.request_id, *request.trace, request.started, request.took);
        if (request.error) {
            span.error = true;
            span.attributes.push_back({"error.type", std::to_string(request.error_code)});
            span.attributes.push_back({"rpc.jsonrpc.error_code", std::int64_t{request.error_code}});
        }
        spans_->add(std::move(span));
    }
}

// One line, written field by field: no JSON document is built on a call's
// path. Fields in a fixed order, time first, as people read the file.
void Observability::audit(const CallRecord& call) {
    std::string line;
    line.reserve(512);
    const auto field = [&line](std::string_view key) {
        line += line.empty() ? "{\"" : ",\"";
        line += key;
        line += "\":";
    };
    const auto text = [&](std::string_view key, std::string_view value) {
        field(key);
        append_json_string(line, value);
    };
    field("time");
    line += '"';
    append_utc(line, call.started + std::chrono::duration_cast<std::chrono::system_clock::duration>(call.took), 6);
    line += '"';
    text("event", call.task_id.empty() ? "tool_call" : "task_round");
    text("principal", call.principal);
    text("principal_kind", call.principal_kind);
    if (!call.client_id.empty()) text("client_id", call.client_id);
    if (!call.store.empty()) text("store", call.store);
    if (!call.user.empty()) text("user", call.user);
    text("family", call.family);
    text("tool", call.tool);
    // The gate's decision: a refusal (by the gate or a limit before it) or
    // a call that went on to its plugin; a malformed call reached neither.
    if (call.outcome == CallOutcome::refused)
        text("decision", "refused");
    else if (call.outcome != CallOutcome::protocol_error)
        text("decision", "allowed");
    text("outcome", outcome_name(call.outcome));
    if (!call.code.empty()) text("code", call.code);
    field("duration_ms");
    char number[32];
    std::snprintf(number, sizeof number, "%.3f", std::chrono::duration<double, std::milli>(call.took).count());
    line += number;
    if (call.trace && !call.trace->empty()) {
        text("trace_id", call.trace->trace_hex());
        text("span_id", call.trace->span_hex());
    }
    if (call.request_id && !call.request_id->is_null()) {
        field("request_id");
        line += call.request_id->is_string() ? nlohmann::json(id_text(call.request_id))
                                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                             : call.request_id->dump();
    }
    if (!call.task_id.empty()) text("task_id", call.task_id);
    text("revision", call.revision);
    text("transport", call.transport);
    if (settings_.audit.include_arguments && call.arguments && call.arguments->is_object()) {
        // The session handle is the host's business, not what the agent asked.
        nlohmann::json arguments = *call.arguments;
        arguments.erase("session");
        field("arguments");
        line += arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    line += '}';
    audit_log_->write(std::move(line));
}

void Observability::auth_failure(std::string_view reason) {
    auth_failures_.with({reason}).add();
}
void Observability::rate_limited(std::string_view limit) {
    rate_limited_.with({limit}).add();
}
void Observability::backend_error(std::string_view backend) {
    backend_errors_.with({backend}).add();
}
void Observability::plugin_load_failures(std::size_t failures) {
    plugin_load_failures_.add(failures);
}
void Observability::families_loaded(std::size_t families) {
    families_ = families;
}

void Observability::reopen_audit() {
    if (audit_log_) audit_log_->reopen();
}

void Observability::flush_audit() {
    if (audit_log_) audit_log_->flush();
}

void add_process_metrics(MetricRegistry& registry) {
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    // /proc/self/stat fields after the command's closing ')': state is 3,
    // utime 14, stime 15, starttime 22 (in ticks since boot), rss 24 (pages).
    const auto stat_fields = [] {
        std::ifstream in("/proc/self/stat");
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::vector<std::string> fields;
        const auto close = text.rfind(')');
        if (close == std::string::npos) return fields;
        std::string field;
        for (char c : text.substr(close + 2)) {
            if (c == ' ' || c == '\n') {
                if (!field.empty()) fields.push_back(std::move(field));
                field.clear();
            } else {
                field += c;
            }
        }
        return fields;
    };
    const auto field = [](const std::vector<std::string>& fields, std::size_t number) {
        const std::size_t index = number - 3; // fields[0] is field 3, the state
        return index < fields.size() ? std::stod(fields[index]) : 0.0;
    };
    registry.add<ReadFamily>(
        "process_cpu_seconds_total", "User and system CPU time the process spent, in seconds.",
        std::vector<std::string>{},
        [=] {
            const auto fields = stat_fields();
            return ReadFamily::Series{{{}, (field(fields, 14) + field(fields, 15)) / ticks}};
        },
        "counter");
    registry.add<ReadFamily>("process_resident_memory_bytes", "Resident memory of the process, in bytes.",
                             std::vector<std::string>{}, [=] {
                                 const auto fields = stat_fields();
                                 return ReadFamily::Series{{{}, field(fields, 24) * page}};
                             });
    registry.add<ReadFamily>("process_open_fds", "File descriptors the process holds open.", std::vector<std::string>{},
                             [] {
                                 std::error_code ignored;
                                 double open = 0;
                                 for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ignored);
                                      it != std::filesystem::directory_iterator(); it.increment(ignored))
                                     ++open;
                                 return ReadFamily::Series{{{}, open}};
                             });
    // Boot time plus the process's start in ticks since boot.
    double boot = 0;
    {
        std::ifstream in("/proc/stat");
        for (std::string key; in >> key;)
            if (key == "btime") {
                in >> boot;
                break;
            }
    }
    const double started = boot + field(stat_fields(), 22) / ticks;
    registry.add<ReadFamily>("process_start_time_seconds", "When the process started, in seconds since the epoch.",
                             std::vector<std::string>{}, [started] {
                                 return ReadFamily::Series{{{}, started}};
                             });
}

} // namespace gatehouse::metrics
