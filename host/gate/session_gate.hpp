#pragma once

#include "gate/gate_pipeline.hpp"
#include "session/session_service.hpp"

namespace gatehouse::gate {

// Puts the gate's checks in their fixed order:
//   license (add_license_check, called before this)
//   -> session -> store binding -> grant -> critical notes -> rules.
// The checks after `session` rely on the session it found.
void add_session_checks(GatePipeline& gate, session::SessionService& sessions);

} // namespace gatehouse::gate
