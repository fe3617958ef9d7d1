#include "auth/json_web_key.hpp"

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/param_build.h>

#include <stdexcept>
#include <vector>

namespace gatehouse::auth {

namespace {

using ParamBuild = std::unique_ptr<OSSL_PARAM_BLD, decltype(&OSSL_PARAM_BLD_free)>;
using Params = std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)>;
using PkeyContext = std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)>;
using Bignum = std::unique_ptr<BIGNUM, decltype(&BN_free)>;

std::string member(const nlohmann::json& jwk, const char* name) {
    const auto it = jwk.find(name);
    if (it == jwk.end() || !it->is_string())
        throw std::invalid_argument(std::string("the JWK has no string member '") + name + "'");
    std::string bytes;
    if (!base64url_decode(it->get_ref<const std::string&>(), bytes) || bytes.empty())
        throw std::invalid_argument(std::string("the JWK member '") + name + "' is not base64url");
    return bytes;
}

Bignum bignum(const std::string& bytes) {
    return Bignum(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()), nullptr),
        BN_free);
}

std::shared_ptr<EVP_PKEY> from_params(const char* type, OSSL_PARAM* params) {
    PkeyContext ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr), EVP_PKEY_CTX_free);
    EVP_PKEY* key = nullptr;
    if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
        EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params) != 1 || !key)
        throw std::invalid_argument(std::string("OpenSSL refused the ") + type + " key");
    return {key, EVP_PKEY_free};
}

std::shared_ptr<EVP_PKEY> rsa_key(const nlohmann::json& jwk) {
    const auto n = bignum(member(jwk, "n"));
    const auto e = bignum(member(jwk, "e"));
    if (BN_num_bits(n.get()) < 2048) throw std::invalid_argument("the RSA key is shorter than 2048 bits");
    ParamBuild build(OSSL_PARAM_BLD_new(), OSSL_PARAM_BLD_free);
    if (!build || OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1)
        throw std::invalid_argument("OpenSSL refused the RSA key");
    Params params(OSSL_PARAM_BLD_to_param(build.get()), OSSL_PARAM_free);
    return from_params("RSA", params.get());
}

std::shared_ptr<EVP_PKEY> ec_key(const nlohmann::json& jwk) {
    if (string_member(jwk, "crv") != "P-256")
        throw std::invalid_argument("only the EC curve P-256 (ES256) is supported");
    const auto x = member(jwk, "x");
    const auto y = member(jwk, "y");
    if (x.size() != 32 || y.size() != 32) throw std::invalid_argument("a P-256 key has 32-byte x and y");
    std::string point = "\x04" + x + y;
    ParamBuild build(OSSL_PARAM_BLD_new(), OSSL_PARAM_BLD_free);
    if (!build || OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
        throw std::invalid_argument("OpenSSL refused the EC key");
    Params params(OSSL_PARAM_BLD_to_param(build.get()), OSSL_PARAM_free);
    return from_params("EC", params.get());
}

std::shared_ptr<EVP_PKEY> ed25519_key(const nlohmann::json& jwk) {
    if (string_member(jwk, "crv") != "Ed25519") throw std::invalid_argument("only the OKP curve Ed25519 is supported");
    const auto x = member(jwk, "x");
    EVP_PKEY* key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                                reinterpret_cast<const unsigned char*>(x.data()), x.size());
    if (!key) throw std::invalid_argument("OpenSSL refused the Ed25519 key");
    return {key, EVP_PKEY_free};
}

// JWS carries ES256 signatures as R||S; OpenSSL verifies DER.
std::string ecdsa_der(std::string_view raw) {
    if (raw.size() != 64) return {};
    std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(ECDSA_SIG_new(), ECDSA_SIG_free);
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
    BIGNUM* r = BN_bin2bn(bytes, 32, nullptr);
    BIGNUM* s = BN_bin2bn(bytes + 32, 32, nullptr);
    if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
        BN_free(r);
        BN_free(s);
        return {};
    }
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig.get(), &der);
    if (len <= 0) return {};
    std::string out(reinterpret_cast<char*>(der), static_cast<std::size_t>(len));
    OPENSSL_free(der);
    return out;
}

} // namespace

std::string string_member(const nlohmann::json& object, const char* name) {
    if (!object.is_object()) return {};
    const auto it = object.find(name);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

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
    out.kid_ = string_member(jwk, "kid");
    const std::string kty = string_member(jwk, "kty");
    if (jwk.contains("use") && jwk["use"] != "sig") throw std::invalid_argument("the key is not for signatures");
    if (kty == "RSA") {
        out.algorithm_ = "RS256";
        out.key_ = rsa_key(jwk);
    } else if (kty == "EC") {
        out.algorithm_ = "ES256";
        out.key_ = ec_key(jwk);
    } else if (kty == "OKP") {
        out.algorithm_ = "EdDSA";
        out.key_ = ed25519_key(jwk);
    } else {
        throw std::invalid_argument("unsupported key type '" + kty + "' (RSA, EC P-256, OKP Ed25519)");
    }
    if (const auto alg = jwk.find("alg"); alg != jwk.end() && *alg != out.algorithm_)
        throw std::invalid_argument("the key's alg is not " + out.algorithm_ + ", the one its type verifies");
    return out;
}

bool JsonWebKey::verify(std::string_view signing_input, std::string_view signature) const {
    std::string der;
    if (algorithm_ == "ES256") {
        der = ecdsa_der(signature);
        if (der.empty()) return false;
        signature = der;
    }
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    const EVP_MD* digest = algorithm_ == "EdDSA" ? nullptr : EVP_sha256();
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, digest, nullptr, key_.get()) != 1) return false;
    return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1;
}

} // namespace gatehouse::auth
