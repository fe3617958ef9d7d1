#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "session/session_service.hpp"

#include <string>
#include <vector>

namespace gatehouse::gate {

// The gate, in its one order:
//   license -> session -> store binding -> grant -> critical notes -> rules.
// The license check runs when the configuration has a license section (for
// `families`, the loaded ones). The checks after `session` rely on the
// session it found. Without session services (`sessions` null) no session
// can open: with the gate on (`gate_on`), every gated tool is refused
// (NoSessionsCheck) rather than served unchecked; with `gate: false`,
// gated tools run without those checks (for testing a plugin).
GatePipeline make_gate(const config::LicenseSettings& license, const std::vector<std::string>& families,
                       session::SessionService* sessions, bool gate_on);

} // namespace gatehouse::gate
