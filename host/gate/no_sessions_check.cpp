#include "gate/no_sessions_check.hpp"

namespace gatehouse::gate {

std::optional<Refusal> NoSessionsCheck::check(const GateContext&) {
    return Refusal{std::string(refusal_code::not_connected),
                   "This host has no session configuration, so no session can be opened and gated tools cannot "
                   "run. Tell the person: the operator must add a session section to the host's configuration.",
                   {{"action", "tell_the_person"}}};
}

} // namespace gatehouse::gate
