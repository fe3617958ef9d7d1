#pragma once

#include <gatehouse/plugin.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sessions_bot {

using Json = nlohmann::json;

// Milliseconds since the Unix epoch (what records hold).
std::int64_t now_ms();

// One bot session as the state backend keeps it (JSON under
// "session/<session_id>"). `owner` is the principal that created it (the
// host's opaque owner key); nobody else sees it. Neither the link's token nor
// any issued token is stored in clear: only their SHA-256.
struct BotSession {
    std::string session_id;
    std::string owner;
    std::string type; // LOGIN, LINK, OPEN_BILLING, PAY_PRODUCT, OPEN_SUPPORT
    std::string bot;  // slug of the bot it was created for
    std::string bot_name;
    std::string requested_by;      // the caller's subject, shown on the page
    Json details = Json::object(); // external_user_id, login_session_id, metadata, product_seq_id
    std::string redirect_url;
    std::string state = "pending"; // pending, approved, denied (expired is computed)
    std::optional<std::uint64_t> user_seq_id;
    std::string approval_code;      // while approved and not yet exchanged
    std::string approval_code_hash; // kept after exchange, so a second one is told apart from an unknown code
    bool exchanged = false;
    std::int64_t created_ms = 0;
    std::int64_t expires_ms = 0;

    // What the person or the service sees now: "expired" once a session not
    // exchanged passes its expiry.
    std::string visible_state(std::int64_t now) const;

    Json to_json() const;
    static BotSession from_json(const Json& j);
};

// The family's keys in the host's state backend, through one call (a tool
// call or a page request). Records outlive their expiry by `retention`, so a
// late poll still hears "expired" rather than "unknown".
class BotSessionStore {
public:
    BotSessionStore(const gh::Call& call, std::chrono::milliseconds retention) : call_(call), retention_(retention) {}

    void save(const BotSession& session) const;
    std::optional<BotSession> load(std::string_view session_id) const;

    // Which session an unguessable page token (by its hash) or an approval
    // code (by its hash) belongs to.
    void link(std::string_view kind, std::string_view hash, const BotSession& session) const;
    std::optional<std::string> linked(std::string_view kind, std::string_view hash) const;

    // The one-use right to exchange an approval code (by its hash): put when
    // the person approves, lasting until the session expires, and taken in
    // one step by the exchange (state_take). Of exchanges racing on any
    // number of instances, only the one that takes it may mint tokens.
    void issue_ticket(std::string_view code_hash, const BotSession& session) const;
    bool take_ticket(std::string_view code_hash, std::string_view session_id) const;

    // Tokens issued by an exchange, stored only as their hashes.
    void save_token(std::string_view hash, const Json& grant, std::chrono::milliseconds ttl) const;

private:
    std::chrono::milliseconds ttl_of(const BotSession& session) const;

    const gh::Call& call_;
    std::chrono::milliseconds retention_;
};

} // namespace sessions_bot
