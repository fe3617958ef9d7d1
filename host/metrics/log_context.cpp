#include "metrics/log_context.hpp"

#include <spdlog/details/fmt_helper.h>
#include <spdlog/pattern_formatter.h>

#include <chrono>
#include <ctime>

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

void append_json_string(spdlog::memory_buf_t& dest, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    dest.push_back('"');
    for (unsigned char c : text) {
        switch (c) {
        case '"': append(dest, "\\\""); break;
        case '\\': append(dest, "\\\\"); break;
        case '\n': append(dest, "\\n"); break;
        case '\r': append(dest, "\\r"); break;
        case '\t': append(dest, "\\t"); break;
        default:
            if (c < 0x20) {
                const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
                dest.append(escaped, escaped + sizeof escaped);
            } else {
                dest.push_back(static_cast<char>(c));
            }
        }
    }
    dest.push_back('"');
}

// One JSON object a line. Messages are the host's sentences, which may hold
// any byte a plugin logged: escaped as JSON strings (bytes that are not
// UTF-8 pass as they are; log shippers take them as Latin-1 or replace them).
class JsonFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const auto since_epoch = msg.time.time_since_epoch();
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
        const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
        const std::time_t t = seconds.count();
        std::tm utc{};
        gmtime_r(&t, &utc);
        char stamp[40];
        const std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
        std::snprintf(stamp + n, sizeof stamp - n, ".%03dZ", static_cast<int>(millis));
        append(dest, "{\"time\":\"");
        append(dest, stamp);
        append(dest, "\",\"level\":\"");
        const auto level = spdlog::level::to_string_view(msg.level);
        dest.append(level.data(), level.data() + level.size());
        append(dest, "\",\"message\":");
        append_json_string(dest, std::string_view(msg.payload.data(), msg.payload.size()));
        if (const TraceContext* trace = LogScope::current()) {
            append(dest, ",\"trace_id\":\"");
            append(dest, trace->trace_hex());
            append(dest, "\",\"span_id\":\"");
            append(dest, trace->span_hex());
            dest.push_back('"');
        }
        append(dest, "}\n");
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
