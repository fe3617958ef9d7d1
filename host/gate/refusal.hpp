#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::gate {

// The stable machine codes of the gate's refusals. Shipped codes are never
// renamed or reused; new ones are only appended.
namespace refusal_code {
inline constexpr std::string_view not_connected = "NOT_CONNECTED";
inline constexpr std::string_view store_switched = "STORE_SWITCHED";
inline constexpr std::string_view not_granted = "NOT_GRANTED";
inline constexpr std::string_view critical_notes_unread = "CRITICAL_NOTES_UNREAD";
inline constexpr std::string_view rules_not_accepted = "RULES_NOT_ACCEPTED";
inline constexpr std::string_view license_missing = "LICENSE_MISSING";
inline constexpr std::string_view license_expired = "LICENSE_EXPIRED";
inline constexpr std::string_view license_invalid = "LICENSE_INVALID";
inline constexpr std::string_view license_not_covered = "LICENSE_NOT_COVERED";
inline constexpr std::string_view active_bot_changed = "ACTIVE_BOT_CHANGED";
// A check or session service that could not decide (never a silent pass).
inline constexpr std::string_view state_unavailable = "STATE_UNAVAILABLE";
inline constexpr std::string_view program_state_unreadable = "PROGRAM_STATE_UNREADABLE";
inline constexpr std::string_view grants_unreadable = "GRANTS_UNREADABLE";
inline constexpr std::string_view credentials_refused = "CREDENTIALS_REFUSED";
inline constexpr std::string_view critical_notes_unavailable = "CRITICAL_NOTES_UNAVAILABLE";
inline constexpr std::string_view conversation_folder_unsafe = "CONVERSATION_FOLDER_UNSAFE";
inline constexpr std::string_view too_many_topics = "TOO_MANY_TOPICS";
// Session services refusing what the agent asked.
inline constexpr std::string_view topic_invalid = "TOPIC_INVALID";
inline constexpr std::string_view store_not_open = "STORE_NOT_OPEN";
inline constexpr std::string_view rules_code_invalid = "RULES_CODE_INVALID";
// The host's own bounds (limits: and rate_limits: in the YAML).
inline constexpr std::string_view argument_too_large = "ARGUMENT_TOO_LARGE";
inline constexpr std::string_view rate_limited = "RATE_LIMITED";
inline constexpr std::string_view plugin_busy = "PLUGIN_BUSY";
inline constexpr std::string_view tool_timeout = "TOOL_TIMEOUT";
// Store credentials (ABI 1.4 store_credentials) and the answer check.
inline constexpr std::string_view credentials_not_allowed = "CREDENTIALS_NOT_ALLOWED";
inline constexpr std::string_view credentials_unavailable = "CREDENTIALS_UNAVAILABLE";
inline constexpr std::string_view secret_in_result = "SECRET_IN_RESULT";
inline constexpr std::string_view too_many_in_flight = "TOO_MANY_IN_FLIGHT"; // JSON-RPC error data, not a tool result
// The access token lacks the tool's scope (reached through call_tool; a
// direct call over HTTP is answered 403 with a challenge instead).
inline constexpr std::string_view insufficient_scope = "INSUFFICIENT_SCOPE";
// Tasks (tasks/): the principal has tasks.max_per_principal unfinished
// tasks; a task's result is over tasks.max_result_bytes; it ran longer than
// tasks.max_run_ms; tasks/get came faster than its pollIntervalMs (JSON-RPC
// error data, not a tool result).
inline constexpr std::string_view too_many_tasks = "TOO_MANY_TASKS";
inline constexpr std::string_view result_too_large = "RESULT_TOO_LARGE";
inline constexpr std::string_view task_overran = "TASK_OVERRAN";
inline constexpr std::string_view polled_too_fast = "POLLED_TOO_FAST";
// The job tools (job_status, job_result, job_cancel) of a client without the
// Tasks extension.
inline constexpr std::string_view job_not_found = "JOB_NOT_FOUND";
inline constexpr std::string_view job_not_finished = "JOB_NOT_FINISHED";
inline constexpr std::string_view job_failed = "JOB_FAILED";
inline constexpr std::string_view job_cancelled = "JOB_CANCELLED";
// The integer does not fit the 64 bits the host and its plugins read.
inline constexpr std::string_view integer_out_of_range = "INTEGER_OUT_OF_RANGE";
// The family's process (isolation: process) died while serving the call,
// or is being started again after it died.
inline constexpr std::string_view family_crashed = "FAMILY_CRASHED";
// The MCP server a family of upstreams: is a client of cannot be reached, or
// stopped answering during the call; the host is connecting to it again.
inline constexpr std::string_view upstream_unavailable = "UPSTREAM_UNAVAILABLE";
// A string value or key in a tool call's arguments holds U+0000, which
// schema lengths do not count past and plugins may cut at.
inline constexpr std::string_view nul_in_string = "NUL_IN_STRING";
} // namespace refusal_code

// A refusal code as the wire carries it: UPPER_SNAKE, a letter first, at
// most 64 characters. Families' own codes (GH_STATUS_REFUSED) must fit too.
bool valid_refusal_code(std::string_view code);

// The gate said no: nothing in the plugin ran. Becomes a tool result with
// isError and structuredContent {code, message, next}.
struct Refusal {
    std::string code;
    std::string message;                            // a sentence the agent can act on
    nlohmann::json next = nlohmann::json::object(); // what the agent needs for its next step
    // When to try again, for refusals that pass with time (RATE_LIMITED):
    // next.retryAfterMs on the wire, and what an HTTP transport turns into
    // 429 with Retry-After.
    std::optional<std::uint64_t> retry_after_ms = std::nullopt;

    // {code, message, next}: the structuredContent of its tool result, and
    // what a host service answers a plugin with when it refuses.
    nlohmann::json to_json() const;
    nlohmann::json to_tool_result() const;
};

// The outputSchema a tool publishes: its own schema, or the refusal's
// structuredContent {code, message, next}. Every refusal of the tool carries
// that structure, and clients that check structuredContent against the
// published schema even when isError is set (TypeScript SDK 1.x) must accept
// it. `$schema`, `$id`, `$defs` and `definitions` stay at the root, and
// references into the tool's own schema are re-pointed to where it now sits.
nlohmann::json published_output_schema(const nlohmann::json& own);

// A family's own refusal (GH_STATUS_REFUSED): its answer read as
// {code, message, next?}, or nothing when it does not have that shape.
std::optional<Refusal> family_refusal(std::string_view answer);

} // namespace gatehouse::gate
