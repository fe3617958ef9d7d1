#pragma once

#include "auth/principal.hpp"
#include "config/config.hpp"
#include "gate/refusal.hpp"
#include "plugins/live_registry.hpp"
#include "session/grant_table.hpp"
#include "session/session_table.hpp"
#include "session/store_credentials.hpp"
#include "session/store_source.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string_view>

namespace gatehouse::session {

// A session service said no; the refusal is what the agent sees.
class SessionRefused : public std::runtime_error {
public:
    explicit SessionRefused(gate::Refusal refusal)
        : std::runtime_error(refusal.message), refusal_(std::move(refusal)) {}
    const gate::Refusal& refusal() const { return refusal_; }

private:
    gate::Refusal refusal_;
};

// The host's side of the session family: looks around, opens sessions,
// accepts rules and records critical reads. Reached by plugins through the
// ABI 1.1 host functions, and by the gate through table() and stores().
// Every answer is JSON for the agent and never holds the password, the
// nonce or a path outside the conversation folders.
class SessionService {
public:
    // environment_password_allowed: the host serves stdio and no HTTP, so
    // GATEHOUSE_STORE_PASSWORD may be a source (StoreCredentials).
    SessionService(const config::SessionSettings& settings, std::unique_ptr<state::StateBackend> backend,
                   const plugins::LiveRegistry& registry, bool environment_password_allowed = false);

    nlohmann::json describe(const auth::Principal& principal, std::string_view handle);
    nlohmann::json open(const auth::Principal& principal, std::string_view topic);
    nlohmann::json accept_rules(const auth::Principal& principal, std::string_view handle, std::string_view code);
    nlohmann::json critical_read(const auth::Principal& principal, std::string_view handle, std::string_view family,
                                 std::string_view item_ids);

    SessionTable& table() { return table_; }
    const StoreSource& stores() const { return stores_; }
    const StoreCredentials& credentials() const { return credentials_; }

private:
    std::vector<CriticalItem> critical_items(const std::string& store, const std::string& user,
                                             const auth::Principal& principal);
    Session live(const auth::Principal& principal, std::string_view handle);

    const config::SessionSettings& settings_;
    SessionTable table_;
    StoreSource stores_;
    StoreCredentials credentials_;
    GrantTable grants_;
    const plugins::LiveRegistry& registry_;
};

// The refusal for a handle that names no live session of the caller.
gate::Refusal not_connected_refusal();

} // namespace gatehouse::session
