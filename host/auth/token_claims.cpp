#include "auth/token_claims.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace gatehouse::auth {

namespace {

bool names_audience(const nlohmann::json& aud, const std::vector<std::string>& accepted) {
    const auto one = [&](const nlohmann::json& v) {
        return v.is_string() && std::find(accepted.begin(), accepted.end(), v.get<std::string>()) != accepted.end();
    };
    if (aud.is_array()) return std::any_of(aud.begin(), aud.end(), one);
    return one(aud);
}

std::vector<std::string> scopes_of(const nlohmann::json& claims) {
    std::vector<std::string> out;
    if (const auto scope = claims.find("scope"); scope != claims.end() && scope->is_string()) {
        std::istringstream words(scope->get<std::string>());
        for (std::string word; words >> word;)
            out.push_back(word);
    } else if (const auto scp = claims.find("scp"); scp != claims.end() && scp->is_array()) {
        for (const auto& s : *scp)
            if (s.is_string()) out.push_back(s.get<std::string>());
    }
    return out;
}

} // namespace

nlohmann::json parse_claims_object(std::string_view text) {
    using Event = nlohmann::json::parse_event_t;
    // The member names seen so far in each object being read, innermost last.
    std::vector<std::set<std::string>> open_objects;
    bool duplicate = false;
    const auto watch = [&](int, Event event, nlohmann::json& parsed) {
        switch (event) {
        case Event::object_start: open_objects.emplace_back(); break;
        case Event::object_end:
            if (!open_objects.empty()) open_objects.pop_back();
            break;
        case Event::key:
            if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second)
                duplicate = true;
            break;
        default: break;
        }
        return true;
    };
    auto parsed = nlohmann::json::parse(text.begin(), text.end(), watch, false);
    if (duplicate || !parsed.is_object()) return nlohmann::json(nlohmann::json::value_t::discarded);
    return parsed;
}

TokenVerdict check_claims(const nlohmann::json& claims, const ClaimRules& rules,
                          std::chrono::system_clock::time_point now_point) {
    if (!claims.is_object()) return TokenVerdict::reject("the token's claims are not a JSON object");
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(now_point.time_since_epoch()).count();
    const std::int64_t skew = rules.skew.count();

    std::string issuer;
    if (const auto iss = claims.find("iss"); iss != claims.end() && iss->is_string()) issuer = iss->get<std::string>();
    if (!rules.issuers.empty() && std::find(rules.issuers.begin(), rules.issuers.end(), issuer) == rules.issuers.end())
        return TokenVerdict::reject("the token was issued by '" + issuer + "', not an issuer this server trusts");

    const auto aud = claims.find("aud");
    if (aud == claims.end() || !names_audience(*aud, rules.audiences))
        return TokenVerdict::reject("the token is not for this resource (its aud does not name " +
                                    rules.audiences.front() + ")");

    const auto exp = claims.find("exp");
    if (exp == claims.end() || !exp->is_number()) {
        if (rules.require_expiry) return TokenVerdict::reject("the token has no exp");
    } else if (exp->get<double>() + static_cast<double>(skew) <= static_cast<double>(now)) {
        return TokenVerdict::reject("the token has expired");
    }
    if (const auto nbf = claims.find("nbf"); nbf != claims.end()) {
        if (!nbf->is_number()) return TokenVerdict::reject("the token's nbf is not a number");
        if (nbf->get<double>() - static_cast<double>(skew) > static_cast<double>(now))
            return TokenVerdict::reject("the token is not valid yet (nbf)");
    }

    const auto sub = claims.find("sub");
    if (sub == claims.end() || !sub->is_string() || sub->get_ref<const std::string&>().empty())
        return TokenVerdict::reject("the token names no subject (sub)");

    Principal principal;
    principal.kind = "token";
    principal.issuer = issuer;
    principal.subject =
        rules.prefix_subject_with_issuer ? issuer + " " + sub->get<std::string>() : sub->get<std::string>();
    if (const auto c = claims.find("client_id"); c != claims.end() && c->is_string())
        principal.client_id = c->get<std::string>();
    else if (const auto azp = claims.find("azp"); azp != claims.end() && azp->is_string())
        principal.client_id = azp->get<std::string>();
    principal.scopes = scopes_of(claims);
    return TokenVerdict::accept(std::move(principal));
}

} // namespace gatehouse::auth
