#include "gate/session_check.hpp"

#include "session/session_service.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::gate {

std::optional<Refusal> SessionCheck::check(const GateContext& context) {
    auto handle = context.arguments.find("session");
    if (handle == context.arguments.end() || !handle->is_string() || !context.findings)
        return session::not_connected_refusal();
    try {
        auto s = table_.find(handle->get_ref<const std::string&>(), context.principal.owner_key());
        if (!s) return session::not_connected_refusal();
        context.findings->session = std::move(s);
        return std::nullopt;
    } catch (const std::exception& e) {
        spdlog::error("gate: session check could not decide for tool '{}': {}", context.tool.name, e.what());
        return Refusal{std::string(refusal_code::state_unavailable),
                       "The host cannot reach its session state right now, so the call was not run; try again "
                       "shortly.",
                       {{"action", "retry"}}};
    }
}

} // namespace gatehouse::gate
