#include "plugins/call_environment.hpp"

#include "gate/refusal.hpp"

namespace gatehouse::plugins {

namespace {

ServiceAnswer no_session_reachable() {
    const gate::Refusal refusal{std::string(gate::refusal_code::state_unavailable),
                                "This host serves no sessions here."};
    return {GH_STATUS_TOOL_ERROR, refusal.to_json().dump()};
}

} // namespace

ServiceAnswer CallEnvironment::describe_session(std::string_view) {
    return no_session_reachable();
}

ServiceAnswer CallEnvironment::open_session(std::string_view) {
    return no_session_reachable();
}

ServiceAnswer CallEnvironment::accept_rules(std::string_view, std::string_view) {
    return no_session_reachable();
}

ServiceAnswer CallEnvironment::record_critical_read(std::string_view) {
    return no_session_reachable();
}

ServiceAnswer CallEnvironment::store_credentials() {
    const gate::Refusal refusal{std::string(gate::refusal_code::not_connected),
                                "The store's sign-in is handed out only during a gated tool call in an open session."};
    return {GH_STATUS_TOOL_ERROR, refusal.to_json().dump()};
}

} // namespace gatehouse::plugins
