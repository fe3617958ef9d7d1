#pragma once

#include "auth/issuer_keys.hpp"
#include "auth/token_claims.hpp"
#include "auth/token_verdict.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace gatehouse::auth {

// JWT access tokens (RFC 9068): a JWS signed RS256, ES256 or EdDSA by the
// key its trusted issuer publishes, then the claims of ClaimRules.
class JwtVerifier {
public:
    JwtVerifier(ClaimRules rules, std::map<std::string, std::unique_ptr<IssuerKeys>> issuers);

    void start(); // first key reads, in the background

    // Calls `done` at once when the token's key is known (or the token is
    // refused before any key is needed); otherwise after a key re-read.
    void verify(std::string token, VerdictDone done) const;

    // The synchronous part: the verdict, or nullptr in `needs` when the key
    // is not known yet (then `needs` names the issuer to re-read).
    TokenVerdict verify_with_known_keys(std::string_view token, IssuerKeys** needs) const;

private:
    TokenVerdict verify_guarded(std::string_view token, IssuerKeys** needs) const;

    ClaimRules rules_;
    std::map<std::string, std::unique_ptr<IssuerKeys>> issuers_;
};

} // namespace gatehouse::auth
