#pragma once

#include "protocol/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gatehouse::protocol {

// JSON-RPC 2.0 and MCP error codes. Raised by the host only.
namespace error_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int resource_not_found_2025 = -32002;            // 2025-11-25 only; 2026-07-28 uses invalid_params
inline constexpr int header_mismatch = -32020;                    // 2026-07-28
inline constexpr int missing_required_client_capability = -32021; // 2026-07-28
inline constexpr int unsupported_protocol_version = -32022;       // 2026-07-28
} // namespace error_code

// A failure that becomes a JSON-RPC error response (the first of the three
// tiers). Thrown inside the protocol layer, caught at its boundary.
class ProtocolError : public std::runtime_error {
public:
    ProtocolError(int code, const std::string& message, Json data = nullptr)
        : std::runtime_error(message), code_(code), data_(std::move(data)) {}
    int code() const { return code_; }
    const Json& data() const { return data_; }

private:
    int code_;
    Json data_;
};

Json make_result(const Json& id, Json result);
// The answer to request `id` whose result is JSON text written already (an
// object on one line, as ToolCall::result_of passes a plugin's on), with
// `first_members` (written members, `"name":value,...`) put first in it:
// the message make_result would make of that result with those members,
// its result's members in the order the text has them. It is written text
// itself (written_json), which every transport encodes as it is and which
// reads as neither an error nor a result to anything that looks inside.
Json written_result(const Json& id, std::string_view result, std::string_view first_members = {});
Json make_error(const Json& id, int code, const std::string& message, const Json& data = nullptr);
Json make_notification(const char* method, Json params);

// One line of output; invalid UTF-8 from anywhere is replaced, never thrown.
std::string encode(const Json& message);

// A member that should be text, from a message another program wrote: the
// fallback when it is missing, not text, or `message` is no object. Never
// throws (Json::value would, on a member of another type).
std::string text_member(const Json& message, const char* key, std::string fallback = {});

} // namespace gatehouse::protocol
