#include "gate/make_gate.hpp"

#include "gate/critical_notes_check.hpp"
#include "gate/grant_check.hpp"
#include "gate/license_check.hpp"
#include "gate/no_sessions_check.hpp"
#include "gate/rules_check.hpp"
#include "gate/session_check.hpp"
#include "gate/store_binding_check.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::gate {

GatePipeline make_gate(const config::LicenseSettings& license, const std::vector<std::string>& families,
                       session::SessionService* sessions, bool gate_on) {
    GatePipeline gate;
    add_license_check(gate, license, families);
    if (!gate_on) {
        spdlog::warn("gate: false — gated tools run WITHOUT the gate's checks; never use this in production");
    } else if (sessions) {
        gate.add(std::make_unique<SessionCheck>(sessions->table()));
        gate.add(std::make_unique<StoreBindingCheck>(sessions->stores()));
        gate.add(std::make_unique<GrantCheck>());
        gate.add(std::make_unique<CriticalNotesCheck>());
        gate.add(std::make_unique<RulesCheck>());
    } else {
        gate.add(std::make_unique<NoSessionsCheck>());
        spdlog::warn("the configuration has no session section: no session can open, so gated tools are refused "
                     "with NOT_CONNECTED (gate: false serves them unchecked, for testing a plugin)");
    }
    return gate;
}

} // namespace gatehouse::gate
