#pragma once

#include "metrics/batch_queue.hpp"
#include "metrics/otlp_encoding.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gatehouse::metrics {

// Where spans go: an OTLP/HTTP traces endpoint (http://host:port/v1/traces).
struct OtlpEndpoint {
    std::string host;
    std::string port;
    std::string target; // the path
};
// Throws std::invalid_argument saying what is wrong with the URL.
OtlpEndpoint parse_otlp_endpoint(const std::string& url);

// Sends finished spans to an OTLP/HTTP collector from a thread of its own,
// in batches (every 200 ms, or at 512 spans), protobuf-encoded. A call never
// waits for it: a full queue drops the span and counts it, a failed export
// is counted and logged (once until exporting works again) and its batch
// is dropped, as the OpenTelemetry SDKs do.
class SpanExporter {
public:
    struct Counters {
        std::function<void(std::size_t)> dropped;
        std::function<void()> export_failed;
    };

    SpanExporter(OtlpEndpoint endpoint, std::vector<Attribute> resource, std::string scope_version,
                 std::chrono::milliseconds timeout, std::size_t max_queue, Counters counters);
    ~SpanExporter(); // sends what is queued (within the timeout), then stops

    void add(Span span);
    // Waits until every span added so far was sent (or dropped); for tests and shutdown.
    void flush() { spans_.flush(); }

private:
    void send(std::vector<Span>& batch);
    bool post(const std::string& body);

    const OtlpEndpoint endpoint_;
    const std::vector<Attribute> resource_;
    const std::string scope_version_;
    const std::chrono::milliseconds timeout_;
    Counters counters_;
    bool failing_ = false;   // the exporter thread's own
    BatchQueue<Span> spans_; // last: its thread stops before the rest goes
};

} // namespace gatehouse::metrics
