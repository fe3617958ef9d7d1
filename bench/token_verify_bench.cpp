// The per-request cost of knowing who calls over HTTP: a JWT access token
// checked against keys already known (RS256, ES256, EdDSA), an API key
// looked up by its hash, and the Authorization header read. What an
// authorization server round trip costs is not here: it happens only on an
// unknown key or an uncached introspection, off the request path for others.
#include "auth/api_key_table.hpp"
#include "auth/bearer_token.hpp"
#include "auth/http_fetcher.hpp"
#include "auth/issuer_keys.hpp"
#include "auth/jwt_verifier.hpp"
#include "crypto/openssl.hpp"
#include "license/base64.hpp"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

using namespace gatehouse;

namespace {

const std::string kIssuer = "https://as.example";
const std::string kResource = "https://mcp.example/mcp";

std::string b64url(std::string_view bytes) {
    std::string s = license::base64_encode(bytes);
    while (!s.empty() && s.back() == '=')
        s.pop_back();
    for (char& c : s)
        c = c == '+' ? '-' : c == '/' ? '_' : c;
    return s;
}

std::string bn_bytes(const EVP_PKEY* key, const char* name) {
    BIGNUM* bn = nullptr;
    if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) throw std::runtime_error("no bn param");
    std::string out(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(bn);
    return out;
}

struct SigningKey {
    std::string alg;
    std::string kid;
    std::shared_ptr<EVP_PKEY> key;
    nlohmann::json jwk;
};

SigningKey make_key(const std::string& alg) {
    EVP_PKEY* raw = alg == "RS256"   ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048))
                    : alg == "ES256" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                                     : EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (!raw) throw std::runtime_error("keygen failed");
    SigningKey k{alg, alg + "-key", {raw, EVP_PKEY_free}, {}};
    if (alg == "RS256") {
        k.jwk = {{"kty", "RSA"},
                 {"n", b64url(bn_bytes(raw, OSSL_PKEY_PARAM_RSA_N))},
                 {"e", b64url(bn_bytes(raw, OSSL_PKEY_PARAM_RSA_E))}};
    } else if (alg == "ES256") {
        k.jwk = {{"kty", "EC"},
                 {"crv", "P-256"},
                 {"x", b64url(bn_bytes(raw, OSSL_PKEY_PARAM_EC_PUB_X))},
                 {"y", b64url(bn_bytes(raw, OSSL_PKEY_PARAM_EC_PUB_Y))}};
    } else {
        unsigned char pub[32];
        size_t len = sizeof pub;
        EVP_PKEY_get_raw_public_key(raw, pub, &len);
        k.jwk = {{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", b64url({reinterpret_cast<char*>(pub), len})}};
    }
    k.jwk["kid"] = k.kid;
    k.jwk["alg"] = alg;
    return k;
}

std::string sign_jwt(const SigningKey& k, const nlohmann::json& claims) {
    const std::string input =
        b64url(nlohmann::json{{"alg", k.alg}, {"typ", "at+jwt"}, {"kid", k.kid}}.dump()) + "." + b64url(claims.dump());
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestSignInit(ctx.get(), nullptr, k.alg == "EdDSA" ? nullptr : EVP_sha256(), nullptr, k.key.get());
    size_t len = 0;
    EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size());
    std::string sig(len, '\0');
    EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    sig.resize(len);
    if (k.alg == "ES256") {
        // DER from OpenSSL, R||S for JWS.
        const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
        ECDSA_SIG* der = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
        std::string raw(64, '\0');
        BN_bn2binpad(ECDSA_SIG_get0_r(der), reinterpret_cast<unsigned char*>(raw.data()), 32);
        BN_bn2binpad(ECDSA_SIG_get0_s(der), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
        ECDSA_SIG_free(der);
        sig = raw;
    }
    return input + "." + b64url(sig);
}

struct Fixture {
    std::unique_ptr<auth::HttpFetcher> fetcher = auth::make_http_fetcher(std::chrono::milliseconds(1000));
    auth::KeySources sources; // outlives the keys that claimed a source in it
    std::unique_ptr<auth::JwtVerifier> verifier;
    std::map<std::string, std::string> tokens; // alg -> token

    Fixture() {
        auto keys = std::make_unique<auth::IssuerKeys>(kIssuer, kIssuer + "/jwks", auth::IssuerKeys::Timing{}, *fetcher,
                                                       sources);
        nlohmann::json set = {{"keys", nlohmann::json::array()}};
        const auto now =
            std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        std::vector<SigningKey> signing;
        for (const char* alg : {"RS256", "ES256", "EdDSA"}) {
            signing.push_back(make_key(alg));
            set["keys"].push_back(signing.back().jwk);
        }
        keys->replace_keys(set);
        for (const auto& k : signing)
            tokens[k.alg] = sign_jwt(k, {{"iss", kIssuer},
                                         {"sub", "alice"},
                                         {"aud", kResource},
                                         {"iat", now},
                                         {"exp", now + 3600},
                                         {"client_id", "desk"},
                                         {"scope", "notes ledger:read"}});
        std::map<std::string, std::unique_ptr<auth::IssuerKeys>> issuers;
        issuers.emplace(kIssuer, std::move(keys));
        auth::ClaimRules rules;
        rules.audiences = {kResource};
        rules.issuers = {kIssuer};
        verifier = std::make_unique<auth::JwtVerifier>(rules, std::move(issuers));
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

void verify(benchmark::State& state, const std::string& alg) {
    auto& f = fixture();
    const std::string& token = f.tokens.at(alg);
    for (auto _ : state) {
        auth::IssuerKeys* needs = nullptr;
        auto verdict = f.verifier->verify_with_known_keys(token, &needs);
        if (verdict.kind != auth::TokenVerdict::Kind::accepted) {
            state.SkipWithError(("refused: " + verdict.reason).c_str());
            return;
        }
        benchmark::DoNotOptimize(verdict);
    }
}

void BM_Jwt_RS256(benchmark::State& state) {
    verify(state, "RS256");
}
void BM_Jwt_ES256(benchmark::State& state) {
    verify(state, "ES256");
}
void BM_Jwt_EdDSA(benchmark::State& state) {
    verify(state, "EdDSA");
}

void BM_ApiKey(benchmark::State& state) {
    const std::string key = "k3y-0123456789abcdef0123456789abcdef";
    std::vector<config::ApiKeyEntry> entries(16);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        entries[i].sha256_hex = crypto::sha256_hex(key + std::to_string(i));
        entries[i].subject = "user" + std::to_string(i);
    }
    entries.back().sha256_hex = crypto::sha256_hex(key);
    const auth::ApiKeyTable table(entries);
    for (auto _ : state) {
        auto verdict = table.verify(key);
        if (verdict.kind != auth::TokenVerdict::Kind::accepted) {
            state.SkipWithError("refused");
            return;
        }
        benchmark::DoNotOptimize(verdict);
    }
}

void BM_BearerHeader(benchmark::State& state) {
    const std::string header = "Bearer " + fixture().tokens.at("RS256");
    for (auto _ : state) {
        auto bearer = auth::find_bearer_token(std::string_view(header), 1, "/mcp");
        benchmark::DoNotOptimize(bearer);
    }
}

} // namespace

BENCHMARK(BM_Jwt_RS256);
BENCHMARK(BM_Jwt_ES256);
BENCHMARK(BM_Jwt_EdDSA);
BENCHMARK(BM_ApiKey);
BENCHMARK(BM_BearerHeader);
BENCHMARK_MAIN();
