#include "metrics/log_context.hpp"

#include "metrics/json_text.hpp"

#include <spdlog/details/fmt_helper.h>
#include <spdlog/pattern_formatter.h>

namespace gatehouse::metrics {

namespace {

// One per thread by nature: which request's step this thread is running.
// It holds no state of a host (docs/architecture.md, "What is process-wide").
thread_local const TraceContext* t_current_trace = nullptr;

void append(spdlog::memory_buf_t& dest, std::string_view text) {
    dest.append(text.data(), text.data() + text.size());
}

// %* in the text pattern: the request's trace, when the line belongs to one.
class TraceFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
        const TraceContext* trace = LogScope::current();
        if (!trace) return;
        append(dest, " trace_id=");
        append(dest, trace->trace_hex());
        append(dest, " span_id=");
        append(dest, trace->span_hex());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<TraceFlag>(); }
};

// One JSON object a line. Messages are the host's sentences, which may hold
// any byte a plugin logged: escaped as JSON strings (bytes that are not
// UTF-8 pass as they are; log shippers take them as Latin-1 or replace them).
class JsonFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        std::string line = "{\"time\":\"";
        append_utc(line, msg.time, 3);
        line += "\",\"level\":\"";
        const auto level = spdlog::level::to_string_view(msg.level);
        line.append(level.data(), level.size());
        line += "\",\"message\":";
        append_json_string(line, std::string_view(msg.payload.data(), msg.payload.size()));
        if (const TraceContext* trace = LogScope::current()) {
            line += ",\"trace_id\":\"" + trace->trace_hex() + "\",\"span_id\":\"" + trace->span_hex() + "\"";
        }
        line += "}\n";
        append(dest, line);
    }
    std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

} // namespace

LogScope::LogScope(const TraceContext* trace) noexcept : previous_(t_current_trace) {
    if (trace && !trace->empty()) t_current_trace = trace;
}

LogScope::~LogScope() {
    t_current_trace = previous_;
}

const TraceContext* LogScope::current() noexcept {
    return t_current_trace;
}

void set_log_format(spdlog::logger& logger, LogFormat format) {
    if (format == LogFormat::json) {
        logger.set_formatter(std::make_unique<JsonFormatter>());
        return;
    }
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<TraceFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v%*");
    logger.set_formatter(std::move(formatter));
}

} // namespace gatehouse::metrics
