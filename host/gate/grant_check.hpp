#pragma once

#include "gate/gate_pipeline.hpp"

namespace gatehouse::gate {

// Every scope the tool requires is among the session's granted scopes, else
// NOT_GRANTED. Answered from the session alone, without touching the store.
class GrantCheck final : public GateCheck {
public:
    std::optional<Refusal> check(const GateContext& context) override;
};

} // namespace gatehouse::gate
