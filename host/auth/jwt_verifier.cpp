#include "auth/jwt_verifier.hpp"

#include "auth/json_web_key.hpp"
#include "protocol/json_rpc.hpp"

#include <nlohmann/json.hpp>

namespace gatehouse::auth {

namespace {

constexpr std::size_t kMaxTokenBytes = 16 * 1024;

} // namespace

JwtVerifier::JwtVerifier(ClaimRules rules, std::map<std::string, std::unique_ptr<IssuerKeys>> issuers)
    : rules_(std::move(rules)), issuers_(std::move(issuers)) {}

void JwtVerifier::start() {
    for (auto& [name, keys] : issuers_)
        keys->start();
}

TokenVerdict JwtVerifier::verify_with_known_keys(std::string_view token, IssuerKeys** needs) const {
    *needs = nullptr;
    if (token.size() > kMaxTokenBytes) return TokenVerdict::reject("the token is longer than 16384 bytes");
    const auto first = token.find('.');
    const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
    if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
        return TokenVerdict::reject("the token is not a JWT (three base64url parts)");
    std::string header_bytes, payload_bytes, signature;
    if (!base64url_decode(token.substr(0, first), header_bytes) ||
        !base64url_decode(token.substr(first + 1, second - first - 1), payload_bytes) ||
        !base64url_decode(token.substr(second + 1), signature))
        return TokenVerdict::reject("the token is not a JWT (a part is not base64url)");
    const auto header = parse_claims_object(header_bytes);
    const auto claims = parse_claims_object(payload_bytes);
    if (!header.is_object() || !claims.is_object())
        return TokenVerdict::reject("the token's JOSE header or claims are not JSON objects naming each member once");

    const std::string alg = protocol::text_member(header, "alg");
    if (alg != "RS256" && alg != "ES256" && alg != "EdDSA")
        return TokenVerdict::reject("the token is signed with '" + alg + "'; this server accepts RS256, ES256, EdDSA");
    if (header.contains("crit")) return TokenVerdict::reject("the token's header has crit extensions");
    if (const auto typ = header.find("typ"); typ != header.end()) {
        const std::string t = typ->is_string() ? typ->get<std::string>() : "";
        if (t != "at+jwt" && t != "application/at+jwt" && t != "JWT")
            return TokenVerdict::reject("the token's typ '" + t + "' is not an access token");
    }
    // The issuer chooses the keys, so it must be trusted before any key is looked at.
    const std::string iss = protocol::text_member(claims, "iss");
    const auto issuer = issuers_.find(iss);
    if (issuer == issuers_.end())
        return TokenVerdict::reject("the token was issued by '" + iss + "', not an issuer this server trusts");
    const std::string kid = protocol::text_member(header, "kid");
    const auto key = issuer->second->find(kid, alg);
    if (!key) {
        *needs = issuer->second.get();
        return TokenVerdict::reject("the token's signing key (kid '" + kid + "') is not among " + iss + "'s keys");
    }
    if (!key->verify(token.substr(0, second), signature))
        return TokenVerdict::reject("the token's signature does not verify");
    return check_claims(claims, rules_, std::chrono::system_clock::now());
}

TokenVerdict JwtVerifier::verify_guarded(std::string_view token, IssuerKeys** needs) const {
    try {
        return verify_with_known_keys(token, needs);
    } catch (const std::exception&) {
        // A token is input from anyone: whatever it holds ends in a refusal, never in an escape.
        *needs = nullptr;
        return TokenVerdict::reject("the token could not be read");
    }
}

void JwtVerifier::verify(std::string token, VerdictDone done) const {
    IssuerKeys* needs = nullptr;
    auto verdict = verify_guarded(token, &needs);
    if (!needs) return done(std::move(verdict));
    needs->refresh_for_unknown_key([this, token = std::move(token), done = std::move(done)](bool read_ok) {
        IssuerKeys* still = nullptr;
        auto again = verify_guarded(token, &still);
        // Keys that could not be read leave the token undecided, not forged.
        if (still && !read_ok)
            return done(TokenVerdict::cannot_check("the authorization server's keys could not be read"));
        done(std::move(again));
    });
}

} // namespace gatehouse::auth
