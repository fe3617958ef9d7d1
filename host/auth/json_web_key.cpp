#include "auth/json_web_key.hpp"

#include "protocol/json_rpc.hpp"

#include <stdexcept>

namespace gatehouse::auth {

namespace {

std::string member(const nlohmann::json& jwk, const char* name) {
    const auto it = jwk.find(name);
    if (it == jwk.end() || !it->is_string())
        throw std::invalid_argument(std::string("the JWK has no string member '") + name + "'");
    std::string bytes;
    if (!base64url_decode(it->get_ref<const std::string&>(), bytes) || bytes.empty())
        throw std::invalid_argument(std::string("the JWK member '") + name + "' is not base64url");
    return bytes;
}

} // namespace

bool base64url_decode(std::string_view text, std::string& out) {
    out.clear();
    out.reserve(text.size() * 3 / 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : text) {
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '-')
            v = 62;
        else if (c == '_')
            v = 63;
        else
            return false;
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    // A lone trailing character carries less than a byte: not base64url.
    return bits < 6 && (acc & ((1u << bits) - 1)) == 0;
}

JsonWebKey JsonWebKey::parse(const nlohmann::json& jwk) {
    if (!jwk.is_object()) throw std::invalid_argument("a JWK must be a JSON object");
    JsonWebKey out;
    out.kid_ = protocol::text_member(jwk, "kid");
    const std::string kty = protocol::text_member(jwk, "kty");
    if (jwk.contains("use") && jwk["use"] != "sig") throw std::invalid_argument("the key is not for signatures");
    const crypto::OpenSsl& openssl = crypto::openssl();
    if (kty == "RSA") {
        out.algorithm_ = "RS256";
        out.key_ = openssl.rs256_key(member(jwk, "n"), member(jwk, "e"));
    } else if (kty == "EC") {
        if (protocol::text_member(jwk, "crv") != "P-256")
            throw std::invalid_argument("only the EC curve P-256 (ES256) is supported");
        out.algorithm_ = "ES256";
        out.key_ = openssl.es256_key(member(jwk, "x"), member(jwk, "y"));
    } else if (kty == "OKP") {
        if (protocol::text_member(jwk, "crv") != "Ed25519")
            throw std::invalid_argument("only the OKP curve Ed25519 is supported");
        out.algorithm_ = "EdDSA";
        out.key_ = openssl.ed25519_key(member(jwk, "x"));
    } else {
        throw std::invalid_argument("unsupported key type '" + kty + "' (RSA, EC P-256, OKP Ed25519)");
    }
    if (const auto alg = jwk.find("alg"); alg != jwk.end() && *alg != out.algorithm_)
        throw std::invalid_argument("the key's alg is not " + out.algorithm_ + ", the one its type verifies");
    return out;
}

bool JsonWebKey::verify(std::string_view signing_input, std::string_view signature) const {
    return key_->verify(signing_input, signature);
}

} // namespace gatehouse::auth
