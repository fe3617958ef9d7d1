#pragma once

#include "metrics/trace_context.hpp"

#include <spdlog/logger.h>

#include <string_view>

namespace gatehouse::metrics {

// The trace of the request a thread is working on, for the log lines it
// writes meanwhile (the host's own and a plugin's, through the host
// functions): set for the scope of one request's step on one thread, and
// restored after, so a nested step (a task round, a forwarded call) logs
// its own span and the outer one's again once it returns.
class LogScope {
public:
    explicit LogScope(const TraceContext* trace) noexcept;
    ~LogScope();
    LogScope(const LogScope&) = delete;
    LogScope& operator=(const LogScope&) = delete;

    // The trace of the request this thread works on; null outside any.
    static const TraceContext* current() noexcept;

private:
    const TraceContext* previous_;
};

enum class LogFormat { text, json };

// How the host's log lines read on stderr. text: time, level, message, and
// " trace_id=… span_id=…" in a request's lines. json: one object a line,
// {"time", "level", "message", "trace_id"?, "span_id"?}, for log shippers.
void set_log_format(spdlog::logger& logger, LogFormat format);

} // namespace gatehouse::metrics
