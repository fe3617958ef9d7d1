#include "gate/grant_check.hpp"

#include <algorithm>

namespace gatehouse::gate {

std::optional<Refusal> GrantCheck::check(const GateContext& context) {
    const auto& s = *context.findings->session;
    const auto& required = context.tool.required_scopes;
    if (std::all_of(required.begin(), required.end(), [&](const std::string& scope) { return s.has_scope(scope); }))
        return std::nullopt;
    nlohmann::json missing = nlohmann::json::array();
    for (const auto& scope : context.tool.required_scopes)
        if (!s.has_scope(scope)) missing.push_back(scope);
    return Refusal{std::string(refusal_code::not_granted),
                   "The store's owner has not granted user '" + s.user + "' what tool '" + context.tool.name +
                       "' needs (" + missing.dump() +
                       "). Ask the owner for the grant, then call session_connect again so it takes effect.",
                   {{"missing_scopes", missing}, {"tool", "session_connect"}, {"topic", s.topic}}};
}

} // namespace gatehouse::gate
