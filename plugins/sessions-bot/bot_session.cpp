#include "bot_session.hpp"

#include <algorithm>

namespace sessions_bot {

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string BotSession::visible_state(std::int64_t now) const {
    if (!exchanged && now >= expires_ms) return "expired";
    return state;
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
              {"approval_code", approval_code},
              {"approval_code_hash", approval_code_hash},
              {"exchanged", exchanged},
              {"created_ms", created_ms},
              {"expires_ms", expires_ms}};
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
    s.approval_code = j.value("approval_code", std::string());
    s.approval_code_hash = j.value("approval_code_hash", std::string());
    s.exchanged = j.value("exchanged", false);
    s.created_ms = j.at("created_ms").get<std::int64_t>();
    s.expires_ms = j.at("expires_ms").get<std::int64_t>();
    return s;
}

std::chrono::milliseconds BotSessionStore::ttl_of(const BotSession& session) const {
    const auto left = std::chrono::milliseconds(session.expires_ms - now_ms());
    return std::max(left, std::chrono::milliseconds(1)) + retention_;
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

void BotSessionStore::issue_ticket(std::string_view code_hash, const BotSession& session) const {
    const auto left = std::max<std::int64_t>(session.expires_ms - now_ms(), 1);
    call_.state_put("ticket/" + std::string(code_hash), session.session_id, static_cast<std::uint64_t>(left));
}

bool BotSessionStore::take_ticket(std::string_view code_hash, std::string_view session_id) const {
    const auto taken = call_.state_take("ticket/" + std::string(code_hash));
    return taken && *taken == session_id;
}

void BotSessionStore::save_token(std::string_view hash, const Json& grant, std::chrono::milliseconds ttl) const {
    call_.state_put("token/" + std::string(hash), grant.dump(), static_cast<std::uint64_t>(ttl.count()));
}

} // namespace sessions_bot
