#pragma once

#include "crypto/openssl.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace gatehouse::auth {

// One public key of a JWK Set (RFC 7517): RSA (RS256), EC P-256 (ES256) or
// OKP Ed25519 (EdDSA).
class JsonWebKey {
public:
    // Throws std::invalid_argument naming what is wrong with the JWK.
    static JsonWebKey parse(const nlohmann::json& jwk);

    const std::string& kid() const { return kid_; }
    const std::string& algorithm() const { return algorithm_; } // the JWS alg this key verifies

    // Checks a JWS signature (for ES256 the 64-byte R||S form of RFC 7518 §3.4).
    bool verify(std::string_view signing_input, std::string_view signature) const;

private:
    std::string kid_;
    std::string algorithm_;
    std::shared_ptr<const crypto::VerifyingKey> key_;
};

// base64url without padding (RFC 7515 §2); nullopt-like empty result and
// false on anything outside the alphabet.
bool base64url_decode(std::string_view text, std::string& out);

} // namespace gatehouse::auth
