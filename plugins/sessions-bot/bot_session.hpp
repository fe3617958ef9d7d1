#pragma once

#include <gatehouse/plugin.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sessions_bot {

using Json = nlohmann::json;

// Milliseconds since the Unix epoch (what records hold).
std::int64_t now_ms();

// How long an undecided session still answers "expired" after its expiry
// (or retention, when that is shorter): long enough for a late poll, short
// enough that sessions nobody decides cost little. A decided session is kept
// for the whole retention.
inline constexpr std::chrono::minutes kUndecidedGrace{5};

// One bot session as the state backend keeps it (JSON under
// "session/<session_id>"). `owner` is the principal that created it (the
// host's opaque owner key); nobody else sees it. Neither the link's token nor
// any issued token is stored in clear: only their SHA-256. The approval code
// is the one secret kept in clear, and not here: the published
// get_session_status hands it to the agent, so it is kept apart
// ("approval-code/<session_id>") from approval until it is exchanged or the
// session expires, whichever comes first; after that only its hash remains.
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
    // Read from records written before the code was kept apart; never written.
    std::string legacy_approval_code;
    std::string approval_code_hash; // kept after exchange, so a second one is told apart from an unknown code
    bool exchanged = false;
    // Created with a one-use decision ticket (records from before it have none).
    bool decided_once = false;
    std::int64_t created_ms = 0;
    std::int64_t expires_ms = 0;

    // What the person or the service sees now: "expired" once a session not
    // exchanged passes its expiry.
    std::string visible_state(std::int64_t now) const;

    // Whether it counts against its owner's live sessions: pending, or
    // approved and not exchanged, before its expiry.
    bool live(std::int64_t now) const;

    Json to_json() const;
    static BotSession from_json(const Json& j);
};

// An entry of an owner's index: a session that was live when it was written.
struct LiveSession {
    std::string session_id;
    std::int64_t expires_ms = 0;
};

// The family's keys in the host's state backend, through one call (a tool
// call or a page request). A decided session outlives its expiry by
// `retention`, an undecided one by kUndecidedGrace (at most `retention`), so
// a late poll still hears "expired" rather than "unknown".
class BotSessionStore {
public:
    BotSessionStore(const gh::Call& call, std::chrono::milliseconds retention) : call_(call), retention_(retention) {}

    void save(const BotSession& session) const;
    std::optional<BotSession> load(std::string_view session_id) const;

    // Which session an unguessable page token (by its hash) or an approval
    // code (by its hash) belongs to. Put again after a decision, so the link
    // lasts as long as the session does.
    void link(std::string_view kind, std::string_view hash, const BotSession& session) const;
    std::optional<std::string> linked(std::string_view kind, std::string_view hash) const;

    // The one-use right to decide a session: put at creation, lasting until
    // the session expires, and taken in one step (state_take) by the press
    // that decides it. Of presses racing on any number of instances, only the
    // one that takes it approves or denies; every other changes nothing.
    void issue_decision(const BotSession& session) const;
    bool take_decision(const BotSession& session) const;

    // The one-use right to exchange an approval code (by its hash): put when
    // the person approves, lasting until the session expires, and taken in
    // one step by the exchange (state_take). Of exchanges racing on any
    // number of instances, only the one that takes it may mint tokens.
    void issue_ticket(std::string_view code_hash, const BotSession& session) const;
    bool take_ticket(std::string_view code_hash, std::string_view session_id) const;

    // The approval code in clear, for get_session_status: kept from approval
    // until the session expires, and erased by the exchange.
    void keep_approval_code(const BotSession& session, std::string_view code) const;
    std::optional<std::string> approval_code(const BotSession& session) const;
    void forget_approval_code(const BotSession& session) const;

    // The owner's index ("owner/<SHA-256 of the owner key>"): the sessions
    // that were live when it was last written. live_sessions answers those
    // still live now (each checked against its own record); record_live
    // writes the index anew (`live` not empty), lasting until the last of
    // them expires. The
    // index is read and written without a lock: instances creating for one
    // owner at the same moment may each count the same sessions, so a
    // cluster of N instances can let an owner reach N times the cap at most.
    std::vector<LiveSession> live_sessions(std::string_view owner) const;
    void record_live(std::string_view owner, const std::vector<LiveSession>& live) const;

    // Tokens issued by an exchange, stored only as their hashes.
    void save_token(std::string_view hash, const Json& grant, std::chrono::milliseconds ttl) const;

private:
    std::chrono::milliseconds ttl_of(const BotSession& session) const;

    const gh::Call& call_;
    std::chrono::milliseconds retention_;
};

} // namespace sessions_bot
