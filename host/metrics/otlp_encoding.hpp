#pragma once

#include "metrics/trace_context.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace gatehouse::metrics {

// An attribute of a span or of the resource: OTLP's AnyValue, the kinds the host uses.
struct Attribute {
    std::string key;
    std::variant<std::string, std::int64_t, bool, double> value;
};

// One finished span, as OTLP carries it.
struct Span {
    TraceContext trace; // its ids, parent and tracestate
    std::string name;
    enum class Kind { internal = 1, server = 2, client = 3 } kind = Kind::server;
    std::uint64_t start_unix_ns = 0;
    std::uint64_t end_unix_ns = 0;
    std::vector<Attribute> attributes;
    bool error = false;
    std::string status_message; // with error
};

// An ExportTraceServiceRequest (opentelemetry-proto, collector/trace/v1) in
// the protobuf wire format OTLP/HTTP sends by default: one resource (the
// host) and one instrumentation scope, holding `spans`.
std::string encode_export_request(const std::vector<Attribute>& resource, const std::string& scope_name,
                                  const std::string& scope_version, const std::vector<Span>& spans);

} // namespace gatehouse::metrics
