#pragma once

#include "auth/principal.hpp"
#include "plugins/call_environment.hpp"
#include "session/password_screen.hpp"
#include "session/session.hpp"
#include "session/session_service.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::session {

// What the plugin of one tool call reaches of the host's sessions, one typed
// function per ABI slot (1.1: describe, open, rules_accept, critical_read;
// 1.4: store_credentials). Each answer is the service's JSON or a refusal
// built from the one refusal table (gate/refusal.hpp), never by hand.
class CallSessions {
public:
    // `service`: null when the host has no session story (every service
    // refuses). `session`: the session the gate found for this call (none
    // for a gate-exempt tool). `store_credentials_allowed`: the operator's
    // grant to the family (store_credentials in its plugins entry).
    CallSessions(SessionService* service, const auth::Principal& principal, std::string family, const Session* session,
                 bool store_credentials_allowed);

    plugins::ServiceAnswer describe(std::string_view handle);
    plugins::ServiceAnswer open(std::string_view topic);
    plugins::ServiceAnswer accept_rules(std::string_view handle, std::string_view code);
    plugins::ServiceAnswer critical_read(std::string_view item_ids);
    plugins::ServiceAnswer store_credentials();

    // Log lines and answers of a family allowed the store password are
    // screened for it.
    bool masks_passwords() const { return store_credentials_allowed_; }
    std::string masked(std::string_view text) { return screen().masked(text); }
    // Whether `text` (an answer, raw and, when it is JSON, with its escapes
    // undone) holds a store password.
    bool holds_password(std::string_view text);

private:
    const Session* open_session() const { return session_; }
    // Every password the sources hold now and any handed out in this call,
    // read once per call and only for a family allowed them.
    PasswordScreen& screen();

    SessionService* service_;
    const auth::Principal& principal_;
    const std::string family_;
    const Session* session_; // the call's session, or null
    const bool store_credentials_allowed_;
    std::optional<PasswordScreen> screen_;
};

} // namespace gatehouse::session
