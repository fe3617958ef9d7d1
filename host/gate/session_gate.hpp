#pragma once

#include "gate/gate_pipeline.hpp"
#include "session/session_service.hpp"

namespace gatehouse::gate {

// Puts the gate's checks in their fixed order:
//   license (a separate piece of work: it goes first, before session)
//   -> session -> store binding -> grant -> critical notes -> rules.
// The checks after `session` rely on the session it found.
void add_session_checks(GatePipeline& gate, session::SessionService& sessions);

} // namespace gatehouse::gate
