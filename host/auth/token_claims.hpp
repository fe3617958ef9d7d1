#pragma once

#include "auth/token_verdict.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::auth {

// What a token's claims must show, whatever carried them (a JWT or an
// introspection answer).
struct ClaimRules {
    std::vector<std::string> audiences; // the resource URL first; `aud` must name one
    std::vector<std::string> issuers;   // `iss` must be one (empty: not checked)
    std::chrono::seconds skew{60};
    bool require_expiry = true;
    bool prefix_subject_with_issuer = false; // several issuers: their subjects must not meet
};

// The JSON object a token's claims (or JOSE header, or introspection answer)
// are written in. A member named twice, at any depth, makes it unreadable: a
// parser that lets the last one win would read another `sub` or `aud` than
// one that lets the first win. Discarded (is_discarded()) when it is not
// JSON, not an object, or names a member twice.
nlohmann::json parse_claims_object(std::string_view text);

// Checks iss, aud, exp, nbf and sub and reads the principal (sub, client_id
// or azp, scope or scp).
TokenVerdict check_claims(const nlohmann::json& claims, const ClaimRules& rules,
                          std::chrono::system_clock::time_point now);

} // namespace gatehouse::auth
