#pragma once

#include "gate/gate_pipeline.hpp"

namespace gatehouse::gate {

// A tool with its own rules refuses its first call in a session with
// RULES_NOT_ACCEPTED, the rules and a code bound to the session's nonce;
// once accepted (session_rules_accept) they are not asked again in that
// session.
class RulesCheck final : public GateCheck {
public:
    std::optional<Refusal> check(const GateContext& context) override;
};

} // namespace gatehouse::gate
