#include "gate/rules_check.hpp"

#include "session/rule_code.hpp"

namespace gatehouse::gate {

std::optional<Refusal> RulesCheck::check(const GateContext& context) {
    const auto& s = *context.findings->session;
    const auto& tool = context.tool;
    if (tool.rules.empty()) return std::nullopt;
    const std::string key = session::accepted_rules_key(tool.name, tool.rules);
    if (s.accepted(key)) return std::nullopt;
    const std::string code = session::rule_code(s.nonce, key);
    return Refusal{std::string(refusal_code::rules_not_accepted),
                   "Tool '" + tool.name +
                       "' has rules this session has not accepted. Read them, call session_rules_accept with "
                       "this session and the code, then repeat the call.",
                   {{"rules", tool.rules}, {"code", code}, {"tool", "session_rules_accept"}}};
}

} // namespace gatehouse::gate
