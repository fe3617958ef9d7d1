#include "bot_session.hpp"

#include "secret.hpp"

#include <algorithm>

namespace sessions_bot {

namespace {

std::uint64_t ms_until(std::int64_t when) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(when - now_ms(), 1));
}

std::string owner_key(std::string_view owner) {
    // The owner key is the host's and may hold any character; its hash makes
    // a key of fixed length and alphabet.
    return "owner/" + sha256_hex(owner);
}

} // namespace

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string BotSession::visible_state(std::int64_t now) const {
    if (!exchanged && now >= expires_ms) return "expired";
    return state;
}

bool BotSession::live(std::int64_t now) const {
    return now < expires_ms && !exchanged && (state == "pending" || state == "approved");
}

Json BotSession::to_json() const {
    Json j = {{"session_id", session_id},
              {"owner", owner},
              {"type", type},
              {"bot", bot},
              {"bot_name", bot_name},
              {"requested_by", requested_by},
              {"details", details},
              {"redirect_url", redirect_url},
              {"state", state},
              {"approval_code_hash", approval_code_hash},
              {"exchanged", exchanged},
              {"decided_once", decided_once},
              {"created_ms", created_ms},
              {"expires_ms", expires_ms}};
    if (!legacy_approval_code.empty()) j["approval_code"] = legacy_approval_code;
    j["user_seq_id"] = user_seq_id ? Json(*user_seq_id) : Json();
    return j;
}

BotSession BotSession::from_json(const Json& j) {
    BotSession s;
    s.session_id = j.at("session_id").get<std::string>();
    s.owner = j.at("owner").get<std::string>();
    s.type = j.at("type").get<std::string>();
    s.bot = j.at("bot").get<std::string>();
    s.bot_name = j.value("bot_name", s.bot);
    s.requested_by = j.value("requested_by", std::string());
    s.details = j.value("details", Json::object());
    s.redirect_url = j.value("redirect_url", std::string());
    s.state = j.at("state").get<std::string>();
    if (j.contains("user_seq_id") && !j["user_seq_id"].is_null()) s.user_seq_id = j["user_seq_id"].get<std::uint64_t>();
    s.legacy_approval_code = j.value("approval_code", std::string());
    s.approval_code_hash = j.value("approval_code_hash", std::string());
    s.exchanged = j.value("exchanged", false);
    s.decided_once = j.value("decided_once", false);
    s.created_ms = j.at("created_ms").get<std::int64_t>();
    s.expires_ms = j.at("expires_ms").get<std::int64_t>();
    return s;
}

std::chrono::milliseconds BotSessionStore::ttl_of(const BotSession& session) const {
    const auto kept_after_expiry =
        session.state == "pending" ? std::min<std::chrono::milliseconds>(kUndecidedGrace, retention_) : retention_;
    return std::chrono::milliseconds(ms_until(session.expires_ms)) + kept_after_expiry;
}

void BotSessionStore::save(const BotSession& session) const {
    call_.state_put("session/" + session.session_id, session.to_json().dump(),
                    static_cast<std::uint64_t>(ttl_of(session).count()));
}

std::optional<BotSession> BotSessionStore::load(std::string_view session_id) const {
    auto text = call_.state_get("session/" + std::string(session_id));
    if (!text) return std::nullopt;
    return BotSession::from_json(Json::parse(*text));
}

void BotSessionStore::link(std::string_view kind, std::string_view hash, const BotSession& session) const {
    call_.state_put(std::string(kind) + "/" + std::string(hash), session.session_id,
                    static_cast<std::uint64_t>(ttl_of(session).count()));
}

std::optional<std::string> BotSessionStore::linked(std::string_view kind, std::string_view hash) const {
    return call_.state_get(std::string(kind) + "/" + std::string(hash));
}

void BotSessionStore::issue_decision(const BotSession& session) const {
    call_.state_put("decision/" + session.session_id, session.session_id, ms_until(session.expires_ms));
}

bool BotSessionStore::take_decision(const BotSession& session) const {
    const auto taken = call_.state_take("decision/" + session.session_id);
    return taken && *taken == session.session_id;
}

void BotSessionStore::issue_ticket(std::string_view code_hash, const BotSession& session) const {
    call_.state_put("ticket/" + std::string(code_hash), session.session_id, ms_until(session.expires_ms));
}

bool BotSessionStore::take_ticket(std::string_view code_hash, std::string_view session_id) const {
    const auto taken = call_.state_take("ticket/" + std::string(code_hash));
    return taken && *taken == session_id;
}

void BotSessionStore::keep_approval_code(const BotSession& session, std::string_view code) const {
    call_.state_put("approval-code/" + session.session_id, code, ms_until(session.expires_ms));
}

std::optional<std::string> BotSessionStore::approval_code(const BotSession& session) const {
    if (auto code = call_.state_get("approval-code/" + session.session_id)) return code;
    if (!session.legacy_approval_code.empty()) return session.legacy_approval_code;
    return std::nullopt;
}

void BotSessionStore::forget_approval_code(const BotSession& session) const {
    call_.state_erase("approval-code/" + session.session_id);
}

std::vector<LiveSession> BotSessionStore::live_sessions(std::string_view owner) const {
    std::vector<LiveSession> live;
    const auto text = call_.state_get(owner_key(owner));
    if (!text) return live;
    const Json index = Json::parse(*text, nullptr, false);
    if (!index.is_array()) return live;
    const auto now = now_ms();
    for (const auto& entry : index) {
        if (!entry.is_object() || !entry.value("id", Json()).is_string()) continue;
        const auto expires = entry.value("expires_ms", Json());
        if (expires.is_number_integer() && expires.get<std::int64_t>() <= now) continue;
        const auto id = entry["id"].get<std::string>();
        // The record, not the index, says whether the session still counts:
        // a denial or an exchange does not touch the index.
        const auto session = load(id);
        if (session && session->owner == owner && session->live(now)) live.push_back({id, session->expires_ms});
    }
    return live;
}

void BotSessionStore::record_live(std::string_view owner, const std::vector<LiveSession>& live) const {
    Json index = Json::array();
    std::int64_t last = 0;
    for (const auto& entry : live) {
        index.push_back({{"id", entry.session_id}, {"expires_ms", entry.expires_ms}});
        last = std::max(last, entry.expires_ms);
    }
    call_.state_put(owner_key(owner), index.dump(), ms_until(last));
}

void BotSessionStore::save_token(std::string_view hash, const Json& grant, std::chrono::milliseconds ttl) const {
    call_.state_put("token/" + std::string(hash), grant.dump(), static_cast<std::uint64_t>(ttl.count()));
}

} // namespace sessions_bot
