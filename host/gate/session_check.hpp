#pragma once

#include "gate/gate_pipeline.hpp"
#include "session/session_table.hpp"

namespace gatehouse::gate {

// The `session` argument names a live session of this principal, else
// NOT_CONNECTED. A backend that cannot answer refuses with
// STATE_UNAVAILABLE. Records the session in the findings for what follows.
class SessionCheck final : public GateCheck {
public:
    explicit SessionCheck(session::SessionTable& table) : table_(table) {}
    std::optional<Refusal> check(const GateContext& context) override;

private:
    session::SessionTable& table_;
};

} // namespace gatehouse::gate
