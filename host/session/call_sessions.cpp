#include "session/call_sessions.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::session {

namespace {

namespace code = gate::refusal_code;

plugins::ServiceAnswer answered(const nlohmann::json& answer) {
    return {GH_STATUS_OK, answer.dump()};
}

plugins::ServiceAnswer refused(const gate::Refusal& refusal) {
    return {GH_STATUS_TOOL_ERROR, refusal.to_json().dump()};
}

gate::Refusal no_sessions_here() {
    return {std::string(code::state_unavailable), "This host serves no sessions here."};
}

// A service's refusal (SessionRefused) is its answer to the plugin.
template <class Service> plugins::ServiceAnswer run(SessionService* service, Service&& call) {
    if (!service) return refused(no_sessions_here());
    try {
        return answered(call(*service));
    } catch (const SessionRefused& e) {
        return refused(e.refusal());
    }
}

} // namespace

CallSessions::CallSessions(SessionService* service, const auth::Principal& principal, std::string family,
                           const Session* session, bool store_credentials_allowed)
    : service_(service), principal_(principal), family_(std::move(family)), session_(session),
      store_credentials_allowed_(store_credentials_allowed) {}

plugins::ServiceAnswer CallSessions::describe(std::string_view handle) {
    return run(service_, [&](SessionService& s) { return s.describe(principal_, handle); });
}

plugins::ServiceAnswer CallSessions::open(std::string_view topic) {
    return run(service_, [&](SessionService& s) { return s.open(principal_, topic); });
}

plugins::ServiceAnswer CallSessions::accept_rules(std::string_view handle, std::string_view code) {
    return run(service_, [&](SessionService& s) { return s.accept_rules(principal_, handle, code); });
}

plugins::ServiceAnswer CallSessions::critical_read(std::string_view item_ids) {
    return run(service_, [&](SessionService& s) {
        const Session* session = open_session();
        if (!session) throw SessionRefused(not_connected_refusal());
        return s.critical_read(principal_, session->handle, family_, item_ids);
    });
}

plugins::ServiceAnswer CallSessions::store_credentials() {
    if (!store_credentials_allowed_)
        return refused({std::string(code::credentials_not_allowed),
                        "The operator has not allowed the family '" + family_ +
                            "' to sign in to the store (store_credentials in its plugins entry); tell the person."});
    const Session* session = open_session();
    if (!service_ || !session)
        return refused({std::string(code::not_connected),
                        "The store's sign-in is handed out only during a gated tool call in an open session."});
    std::optional<StoreLogin> login;
    try {
        login = service_->credentials().login_for(session->store, session->user);
    } catch (const CredentialsRefused& e) {
        spdlog::error("[{}] store_credentials: {}", family_, e.what());
        return refused({std::string(code::credentials_refused),
                        "The host refuses to use the store credentials as they are kept; the operator has the "
                        "details in the host log."});
    }
    if (!login)
        return refused({std::string(code::credentials_unavailable),
                        "The host has no password for store '" + session->store + "' and user '" + session->user +
                            "' (not saved in the program, no credentials file, and no environment password it may "
                            "use); tell the person."});
    screen().add(login->password);
    return answered({{"store", login->store}, {"user", login->user}, {"password", login->password}});
}

bool CallSessions::holds_password(std::string_view text) {
    if (!store_credentials_allowed_) return false;
    const auto& passwords = screen();
    if (passwords.empty()) return false;
    if (passwords.found_in(text)) return true;
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    return !parsed.is_discarded() && passwords.found_in(parsed);
}

PasswordScreen& CallSessions::screen() {
    if (!screen_) {
        screen_.emplace();
        if (service_)
            for (auto& password : service_->credentials().every_password())
                screen_->add(std::move(password));
    }
    return *screen_;
}

} // namespace gatehouse::session
