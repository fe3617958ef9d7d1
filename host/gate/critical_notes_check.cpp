#include "gate/critical_notes_check.hpp"

namespace gatehouse::gate {

std::optional<Refusal> CriticalNotesCheck::check(const GateContext& context) {
    const auto& s = *context.findings->session;
    if (context.tool.reads_critical || s.unread_critical() == 0) return std::nullopt;
    nlohmann::json unread = nlohmann::json::array();
    for (const auto& c : s.critical)
        if (!c.read) unread.push_back({{"family", c.family}, {"id", c.id}, {"title", c.title}});
    return Refusal{std::string(refusal_code::critical_notes_unread),
                   std::to_string(unread.size()) +
                       " critical note(s) must be read before other tools run in this session; read them (the "
                       "listed families' tools that show critical notes), then repeat the call.",
                   {{"unread", unread}}};
}

} // namespace gatehouse::gate
