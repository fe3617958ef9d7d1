#pragma once

#include "gate/gate_pipeline.hpp"

namespace gatehouse::gate {

// While critical notes remembered at connect are unread, only tools that
// read them (GH_TOOL_READS_CRITICAL) run; others get CRITICAL_NOTES_UNREAD
// with the list.
class CriticalNotesCheck final : public GateCheck {
public:
    std::optional<Refusal> check(const GateContext& context) override;
};

} // namespace gatehouse::gate
