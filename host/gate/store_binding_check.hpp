#pragma once

#include "gate/gate_pipeline.hpp"
#include "session/store_source.hpp"

namespace gatehouse::gate {

// On a host that is not pinned, the program must still have the session's
// store open (and the same user logged in), else STORE_SWITCHED. An
// unreadable program state file refuses with PROGRAM_STATE_UNREADABLE.
class StoreBindingCheck final : public GateCheck {
public:
    explicit StoreBindingCheck(const session::StoreSource& stores) : stores_(stores) {}
    std::optional<Refusal> check(const GateContext& context) override;

private:
    const session::StoreSource& stores_;
};

} // namespace gatehouse::gate
