#include "metrics/trace_context.hpp"

#include <random>

namespace gatehouse::metrics {

namespace {

constexpr char kHex[] = "0123456789abcdef";

template <std::size_t N> std::string hex(const std::array<std::uint8_t, N>& bytes) {
    std::string out(2 * N, '0');
    for (std::size_t i = 0; i < N; ++i) {
        out[2 * i] = kHex[bytes[i] >> 4];
        out[2 * i + 1] = kHex[bytes[i] & 15];
    }
    return out;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; // upper case is not valid in a traceparent
}

template <std::size_t N> bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
    if (text.size() != 2 * N) return false;
    bool nonzero = false;
    for (std::size_t i = 0; i < N; ++i) {
        const int high = hex_digit(text[2 * i]);
        const int low = hex_digit(text[2 * i + 1]);
        if (high < 0 || low < 0) return false;
        out[i] = static_cast<std::uint8_t>(high << 4 | low);
        nonzero |= out[i] != 0;
    }
    return nonzero;
}

template <std::size_t N> bool all_zero(const std::array<std::uint8_t, N>& bytes) {
    for (auto b : bytes)
        if (b) return false;
    return true;
}

void put(std::uint64_t value, std::uint8_t* out) {
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<std::uint8_t>(value >> (8 * (7 - i)));
}

} // namespace

bool TraceContext::empty() const {
    return all_zero(trace_id);
}
bool TraceContext::has_parent() const {
    return !all_zero(parent_id);
}
std::string TraceContext::trace_hex() const {
    return hex(trace_id);
}
std::string TraceContext::span_hex() const {
    return hex(span_id);
}
std::string TraceContext::parent_hex() const {
    return hex(parent_id);
}

std::string TraceContext::traceparent() const {
    const std::array<std::uint8_t, 1> flag{flags};
    return "00-" + hex(trace_id) + "-" + hex(span_id) + "-" + hex(flag);
}

std::optional<Traceparent> parse_traceparent(std::string_view text) {
    // version "-" trace-id "-" parent-id "-" flags; a later version may
    // append fields after another "-", which this reader ignores.
    if (text.size() < 55) return std::nullopt;
    std::array<std::uint8_t, 1> version{};
    if (hex_digit(text[0]) < 0 || hex_digit(text[1]) < 0) return std::nullopt;
    version[0] = static_cast<std::uint8_t>(hex_digit(text[0]) << 4 | hex_digit(text[1]));
    if (version[0] == 0xff) return std::nullopt;
    if (version[0] == 0 && text.size() != 55) return std::nullopt;
    if (text.size() > 55 && text[55] != '-') return std::nullopt;
    if (text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
    Traceparent parsed;
    if (!read_hex(text.substr(3, 32), parsed.trace_id)) return std::nullopt;
    if (!read_hex(text.substr(36, 16), parsed.parent_id)) return std::nullopt;
    const int high = hex_digit(text[53]);
    const int low = hex_digit(text[54]);
    if (high < 0 || low < 0) return std::nullopt;
    parsed.flags = static_cast<std::uint8_t>(high << 4 | low);
    return parsed;
}

std::optional<std::string> checked_tracestate(std::string_view text) {
    if (text.empty() || text.size() > 512) return std::nullopt;
    for (unsigned char c : text)
        if (c < 0x20 || c > 0x7e) return std::nullopt;
    return std::string(text);
}

TraceIds::TraceIds() {
    std::random_device device;
    seed_ = (std::uint64_t{device()} << 32) ^ device();
}

std::uint64_t TraceIds::next() {
    // splitmix64 over seed + counter: a bijection of the counter, so ids never repeat.
    std::uint64_t z = seed_ + 0x9e3779b97f4a7c15ull * (counter_.fetch_add(1, std::memory_order_relaxed) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

TraceContext TraceIds::start(const std::optional<Traceparent>& incoming, std::string tracestate) {
    TraceContext trace;
    if (incoming) {
        trace.trace_id = incoming->trace_id;
        trace.parent_id = incoming->parent_id;
        trace.flags = incoming->flags & 1;
        trace.tracestate = std::move(tracestate);
    } else {
        put(next(), trace.trace_id.data());
        put(next(), trace.trace_id.data() + 8);
        trace.flags = 1;
    }
    do
        put(next(), trace.span_id.data());
    while (all_zero(trace.span_id));
    return trace;
}

} // namespace gatehouse::metrics
