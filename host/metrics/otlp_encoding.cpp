#include "metrics/otlp_encoding.hpp"

#include <cstring>

namespace gatehouse::metrics {

namespace {

// The protobuf wire format, as much of it as the messages below need.
enum WireType : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2 };

void put_varint(std::string& out, std::uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

void put_tag(std::string& out, std::uint32_t field, WireType type) {
    put_varint(out, field << 3 | type);
}

void put_bytes(std::string& out, std::uint32_t field, const void* data, std::size_t size) {
    put_tag(out, field, length_delimited);
    put_varint(out, size);
    out.append(static_cast<const char*>(data), size);
}

void put_string(std::string& out, std::uint32_t field, const std::string& text) {
    put_bytes(out, field, text.data(), text.size());
}

void put_message(std::string& out, std::uint32_t field, const std::string& message) {
    put_bytes(out, field, message.data(), message.size());
}

void put_fixed64(std::string& out, std::uint32_t field, std::uint64_t value) {
    put_tag(out, field, fixed64);
    for (int i = 0; i < 8; ++i)
        out += static_cast<char>(value >> (8 * i)); // little-endian
}

void put_uint(std::string& out, std::uint32_t field, std::uint64_t value) {
    put_tag(out, field, varint);
    put_varint(out, value);
}

// AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4.
std::string any_value(const Attribute& attribute) {
    std::string out;
    if (const auto* text = std::get_if<std::string>(&attribute.value)) {
        put_string(out, 1, *text);
    } else if (const auto* flag = std::get_if<bool>(&attribute.value)) {
        put_uint(out, 2, *flag ? 1 : 0);
    } else if (const auto* number = std::get_if<std::int64_t>(&attribute.value)) {
        put_uint(out, 3, static_cast<std::uint64_t>(*number));
    } else {
        const double real = std::get<double>(attribute.value);
        std::uint64_t bits = 0;
        std::memcpy(&bits, &real, sizeof bits);
        put_fixed64(out, 4, bits);
    }
    return out;
}

// KeyValue: key 1, value 2.
void put_attribute(std::string& out, std::uint32_t field, const Attribute& attribute) {
    std::string pair;
    put_string(pair, 1, attribute.key);
    put_message(pair, 2, any_value(attribute));
    put_message(out, field, pair);
}

// Span: trace_id 1, span_id 2, trace_state 3, parent_span_id 4, name 5,
// kind 6, start 7, end 8, attributes 9, status 15, flags 16 (fixed32).
std::string span_message(const Span& span) {
    std::string out;
    put_bytes(out, 1, span.trace.trace_id.data(), span.trace.trace_id.size());
    put_bytes(out, 2, span.trace.span_id.data(), span.trace.span_id.size());
    if (!span.trace.tracestate.empty()) put_string(out, 3, span.trace.tracestate);
    if (span.trace.has_parent()) put_bytes(out, 4, span.trace.parent_id.data(), span.trace.parent_id.size());
    put_string(out, 5, span.name);
    put_uint(out, 6, static_cast<std::uint64_t>(span.kind));
    put_fixed64(out, 7, span.start_unix_ns);
    put_fixed64(out, 8, span.end_unix_ns);
    for (const auto& attribute : span.attributes)
        put_attribute(out, 9, attribute);
    // Status: message 2, code 3 (1 ok, 2 error); unset stays absent.
    if (span.error) {
        std::string status;
        if (!span.status_message.empty()) put_string(status, 2, span.status_message);
        put_uint(status, 3, 2);
        put_message(out, 15, status);
    }
    return out;
}

} // namespace

std::string encode_export_request(const std::vector<Attribute>& resource, const std::string& scope_name,
                                  const std::string& scope_version, const std::vector<Span>& spans) {
    // Resource: attributes 1.
    std::string resource_message;
    for (const auto& attribute : resource)
        put_attribute(resource_message, 1, attribute);
    // InstrumentationScope: name 1, version 2.
    std::string scope;
    put_string(scope, 1, scope_name);
    if (!scope_version.empty()) put_string(scope, 2, scope_version);
    // ScopeSpans: scope 1, spans 2.
    std::string scope_spans;
    put_message(scope_spans, 1, scope);
    for (const auto& span : spans)
        put_message(scope_spans, 2, span_message(span));
    // ResourceSpans: resource 1, scope_spans 2.
    std::string resource_spans;
    put_message(resource_spans, 1, resource_message);
    put_message(resource_spans, 2, scope_spans);
    // ExportTraceServiceRequest: resource_spans 1.
    std::string request;
    put_message(request, 1, resource_spans);
    return request;
}

} // namespace gatehouse::metrics
