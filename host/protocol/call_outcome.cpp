#include "protocol/call_outcome.hpp"

#include "gate/refusal.hpp"

namespace gatehouse::protocol {

namespace {

// The shape every refusal has (gate::Refusal::to_tool_result, a family's
// own GH_STATUS_REFUSED): structuredContent {code, message, next?} and
// nothing else, so a tool's own structured error is not read as one.
bool refusal_shaped(const Json& structured) {
    if (!structured.is_object()) return false;
    const auto code = structured.find("code");
    const auto message = structured.find("message");
    if (code == structured.end() || !code->is_string() || message == structured.end() || !message->is_string())
        return false;
    if (!gate::valid_refusal_code(code->get_ref<const std::string&>())) return false;
    for (const auto& [key, value] : structured.items())
        if (key != "code" && key != "message" && key != "next") return false;
    return true;
}

} // namespace

CallVerdict call_verdict(const Json* response, bool timed_out) {
    using metrics::CallOutcome;
    CallVerdict verdict;
    if (!response) {
        verdict.outcome = CallOutcome::cancelled;
        return verdict;
    }
    if (const auto error = response->find("error"); error != response->end()) {
        verdict.outcome = CallOutcome::protocol_error;
        if (const auto message = error->find("message"); message != error->end() && message->is_string())
            verdict.message = message->get_ref<const std::string&>();
        return verdict;
    }
    const auto result = response->find("result");
    if (result == response->end()) return verdict;
    return result_verdict(*result, timed_out);
}

CallVerdict result_verdict(const Json& result, bool timed_out) {
    using metrics::CallOutcome;
    CallVerdict verdict;
    if (!result.is_object()) return verdict;
    if (const auto type = result.find("resultType"); type != result.end() && type->is_string()) {
        const auto& name = type->get_ref<const std::string&>();
        if (name == "input_required") verdict.outcome = CallOutcome::input_required;
        if (name == "task") verdict.outcome = CallOutcome::task;
        if (verdict.outcome != CallOutcome::ok) return verdict;
    }
    const auto flagged = result.find("isError");
    if (flagged == result.end() || !flagged->is_boolean() || !flagged->get<bool>()) return verdict;
    const auto structured = result.find("structuredContent");
    if (structured != result.end() && refusal_shaped(*structured)) {
        verdict.code = (*structured)["code"].get_ref<const std::string&>();
        verdict.outcome =
            timed_out || verdict.code == gate::refusal_code::tool_timeout ? CallOutcome::timeout : CallOutcome::refused;
        if (const auto next = structured->find("next"); next != structured->end()) verdict.next = &*next;
        return verdict;
    }
    verdict.outcome = CallOutcome::tool_error;
    return verdict;
}

} // namespace gatehouse::protocol
