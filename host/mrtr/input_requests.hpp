#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <optional>
#include <string_view>

namespace gatehouse::mrtr {

// What a plugin answered with GH_STATUS_INPUT_REQUIRED, checked: the requests
// for the client, by key, and the plugin's own state for the next round.
struct InputRequired {
    nlohmann::json requests = nlohmann::json::object(); // key -> {"method", "params"}
    std::string state;
};

// Parses a plugin's GH_STATUS_INPUT_REQUIRED answer. Throws
// std::invalid_argument with a sentence for the log when it is malformed:
// not an object, an unknown method, params that are not an object, a state
// that is not a string or over 8 KiB, more than 16 requests, or nothing at all.
InputRequired parse_input_required(std::string_view text);

// A plain round's {"startTask": true, "requestState"?} (ABI 1.7,
// GH_TOOL_ASKS_BEFORE_TASK): the state the task's first round gets; nothing
// when the answer asks for input as usual.
std::optional<std::string> start_task_answer(std::string_view text);

// What the requests need that the client did not declare, as a
// ClientCapabilities object ({"sampling": {}}, {"elicitation": {"url": {}}});
// empty when the client can answer them all. An elicitation without a mode is
// a form; "elicitation": {} declares forms only.
nlohmann::json missing_capabilities(const nlohmann::json& requests, const nlohmann::json& client_capabilities);

} // namespace gatehouse::mrtr
