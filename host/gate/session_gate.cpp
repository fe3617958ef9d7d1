#include "gate/session_gate.hpp"

#include "gate/critical_notes_check.hpp"
#include "gate/grant_check.hpp"
#include "gate/rules_check.hpp"
#include "gate/session_check.hpp"
#include "gate/store_binding_check.hpp"

namespace gatehouse::gate {

void add_session_checks(GatePipeline& gate, session::SessionService& sessions) {
    // The license check, when configured, is already in place: it comes first
    // (add_license_check in gate/license_check.hpp).
    gate.add(std::make_unique<SessionCheck>(sessions.table()));
    gate.add(std::make_unique<StoreBindingCheck>(sessions.stores()));
    gate.add(std::make_unique<GrantCheck>());
    gate.add(std::make_unique<CriticalNotesCheck>());
    gate.add(std::make_unique<RulesCheck>());
    gate.set_session_service(&sessions);
}

} // namespace gatehouse::gate
