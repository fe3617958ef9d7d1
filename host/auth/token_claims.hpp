#pragma once

#include "auth/token_verdict.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
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

// Checks iss, aud, exp, nbf and sub and reads the principal (sub, client_id
// or azp, scope or scp).
TokenVerdict check_claims(const nlohmann::json& claims, const ClaimRules& rules,
                          std::chrono::system_clock::time_point now);

} // namespace gatehouse::auth
