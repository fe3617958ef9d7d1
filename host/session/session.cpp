#include "session/session.hpp"

#include <algorithm>

namespace gatehouse::session {

std::size_t Session::unread_critical() const {
    return static_cast<std::size_t>(
        std::count_if(critical.begin(), critical.end(), [](const auto& c) { return !c.read; }));
}

bool Session::has_scope(const std::string& scope) const {
    return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
}

bool Session::accepted(const std::string& tool) const {
    return std::find(accepted_rules.begin(), accepted_rules.end(), tool) != accepted_rules.end();
}

nlohmann::json Session::context_view() const {
    return {{"store", store}, {"user", user}, {"topic", topic}, {"folder", folder}, {"principal", principal}};
}

nlohmann::json Session::to_json() const {
    nlohmann::json critical_items = nlohmann::json::array();
    for (const auto& c : critical)
        critical_items.push_back({{"family", c.family}, {"id", c.id}, {"title", c.title}, {"read", c.read}});
    return {{"handle", handle},
            {"principal", principal},
            {"store", store},
            {"user", user},
            {"topic", topic},
            {"folder", folder},
            {"scopes", scopes},
            {"nonce", nonce},
            {"accepted_rules", accepted_rules},
            {"critical", critical_items},
            {"created_ms", created_ms},
            {"last_used_ms", last_used_ms}};
}

Session Session::from_json(const nlohmann::json& r) {
    Session s;
    s.handle = r.at("handle").get<std::string>();
    s.principal = r.at("principal").get<std::string>();
    s.store = r.at("store").get<std::string>();
    s.user = r.at("user").get<std::string>();
    s.topic = r.at("topic").get<std::string>();
    s.folder = r.at("folder").get<std::string>();
    s.scopes = r.at("scopes").get<std::vector<std::string>>();
    s.nonce = r.at("nonce").get<std::string>();
    s.accepted_rules = r.at("accepted_rules").get<std::vector<std::string>>();
    for (const auto& c : r.at("critical"))
        s.critical.push_back({c.at("family").get<std::string>(), c.at("id").get<std::string>(),
                              c.at("title").get<std::string>(), c.at("read").get<bool>()});
    s.created_ms = r.at("created_ms").get<std::int64_t>();
    s.last_used_ms = r.at("last_used_ms").get<std::int64_t>();
    return s;
}

} // namespace gatehouse::session
