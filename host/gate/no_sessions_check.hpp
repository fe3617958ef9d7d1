#pragma once

#include "gate/gate_pipeline.hpp"

namespace gatehouse::gate {

// The gate of a host configured without sessions: no session can ever open,
// so every gated tool is refused. Only `gate: false` in the YAML lets gated
// tools run unchecked; leaving the session section out never does.
class NoSessionsCheck final : public GateCheck {
public:
    std::optional<Refusal> check(const GateContext& context) override;
};

} // namespace gatehouse::gate
