#include "gate/store_binding_check.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::gate {

std::optional<Refusal> StoreBindingCheck::check(const GateContext& context) {
    if (stores_.pinned()) return std::nullopt;
    const auto& s = context.findings->session;
    session::StoreView now;
    try {
        now = stores_.current();
    } catch (const std::exception& e) {
        spdlog::error("gate: store binding check could not decide for tool '{}': {}", context.tool.name, e.what());
        return Refusal{std::string(refusal_code::program_state_unreadable),
                       "The host cannot tell which store the program has open, so the call was not run; tell the "
                       "person.",
                       {{"action", "tell the person"}}};
    }
    if (now.program_running && now.store == s->store && now.user == s->user) return std::nullopt;
    return Refusal{std::string(refusal_code::store_switched),
                   now.program_running && !now.store.empty()
                       ? "The program now has another store or user open than this session was opened for; call "
                         "session_connect again to work with what is open now."
                       : "The program no longer has this session's store open; ask the person to open it, then call "
                         "session_connect again.",
                   {{"tool", "session_connect"}, {"topic", s->topic}}};
}

} // namespace gatehouse::gate
