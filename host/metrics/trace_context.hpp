#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::metrics {

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the trace a
// request belongs to and the span the host opens for it. The caller's
// `traceparent` (params._meta, as the MCP specification reserves it, or
// the HTTP header) names the trace and the parent span; a request without
// one starts a trace of its own.
struct TraceContext {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};   // this request's span
    std::array<std::uint8_t, 8> parent_id{}; // the caller's span; all zero for a trace started here
    std::uint8_t flags = 0;                  // bit 0: sampled
    std::string tracestate;                  // the caller's, passed on unchanged

    bool empty() const;
    bool has_parent() const;
    bool sampled() const { return flags & 1; }
    std::string trace_hex() const;
    std::string span_hex() const;
    std::string parent_hex() const;
    // The traceparent a family or an upstream passes on: this span as the parent.
    std::string traceparent() const;
};

// What a well-formed traceparent carries: version 00 (or a later one,
// read as 00 says), 32 hex digits of trace id and 16 of parent id, neither
// all zero, two of flags, lower case. Anything else is no traceparent.
struct Traceparent {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> parent_id{};
    std::uint8_t flags = 0;
};
std::optional<Traceparent> parse_traceparent(std::string_view text);

// A tracestate is passed on when it reads as one: at most 512 characters of
// printable ASCII (list members are not checked one by one; the host never
// reads them).
std::optional<std::string> checked_tracestate(std::string_view text);

// Unique span and trace ids for one host: a random seed, mixed with a
// counter (splitmix64), so no two requests of a host share an id and no id
// can be guessed from another without the seed. Thread-safe.
class TraceIds {
public:
    TraceIds();
    // A span of the caller's trace, or of a new trace when it sent none.
    TraceContext start(const std::optional<Traceparent>& incoming, std::string tracestate = {});

private:
    std::uint64_t next();

    std::uint64_t seed_;
    std::atomic<std::uint64_t> counter_{0};
};

} // namespace gatehouse::metrics
