#include "gate/grant_check.hpp"

namespace gatehouse::gate {

std::optional<Refusal> GrantCheck::check(const GateContext& context) {
    const auto& s = *context.findings->session;
    nlohmann::json missing = nlohmann::json::array();
    for (const auto& scope : context.tool.required_scopes)
        if (!s.has_scope(scope)) missing.push_back(scope);
    if (missing.empty()) return std::nullopt;
    return Refusal{std::string(refusal_code::not_granted),
                   "The store's owner has not granted user '" + s.user + "' what tool '" + context.tool.name +
                       "' needs (" + missing.dump() +
                       "). Ask the owner for the grant, then call session_connect again so it takes effect.",
                   {{"missing_scopes", missing}, {"tool", "session_connect"}, {"topic", s.topic}}};
}

} // namespace gatehouse::gate
