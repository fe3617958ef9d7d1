#include "crypto/bytes.hpp"
#include "crypto/openssl.hpp"
#include "crypto/random_bytes.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>

using namespace gatehouse;

TEST_CASE("hex and the constant-time comparison", "[crypto]") {
    CHECK(crypto::hex(std::string("\x00\x7f\x80\xff", 4)) == "007f80ff");
    CHECK(crypto::hex("") == "");
    CHECK(crypto::equal_in_constant_time("same", "same"));
    CHECK_FALSE(crypto::equal_in_constant_time("same", "sane"));
    CHECK_FALSE(crypto::equal_in_constant_time("same", "same-but-longer"));
    CHECK(crypto::equal_in_constant_time("", ""));
}

TEST_CASE("random bytes come from the kernel, as many as asked, never the same twice", "[crypto]") {
    CHECK(crypto::random_bytes(0).empty());
    CHECK(crypto::random_bytes(1000).size() == 1000);
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i)
        seen.insert(crypto::random_bytes(16));
    CHECK(seen.size() == 100);
}

TEST_CASE("the OpenSSL module opens beside the executable and computes the known answers", "[crypto]") {
    const crypto::OpenSsl& openssl = crypto::openssl();
    CHECK(&crypto::openssl() == &openssl); // opened once
    // FIPS 180-2 appendix B.1 and RFC 4231 test case 2.
    CHECK(crypto::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(crypto::hex(crypto::as_text(openssl.hmac_sha256("Jefe", "what do ya want for nothing?"))) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("AES-256-GCM opens what it sealed and nothing that was changed", "[crypto]") {
    const crypto::OpenSsl& openssl = crypto::openssl();
    const std::string key = crypto::random_bytes(32);
    const std::string nonce = crypto::random_bytes(12);
    const std::string sealed = openssl.seal_aes256gcm(key, nonce, "header", "the plaintext");
    CHECK(sealed.size() == std::string("the plaintext").size() + 16);
    CHECK(openssl.open_aes256gcm(key, nonce, "header", sealed) == "the plaintext");
    CHECK_FALSE(openssl.open_aes256gcm(key, nonce, "HEADER", sealed));
    CHECK_FALSE(openssl.open_aes256gcm(crypto::random_bytes(32), nonce, "header", sealed));
    std::string flipped = sealed;
    flipped[0] = static_cast<char>(flipped[0] ^ 1);
    CHECK_FALSE(openssl.open_aes256gcm(key, nonce, "header", flipped));
    CHECK_FALSE(openssl.open_aes256gcm(key, nonce, "header", sealed.substr(0, 15)));
    CHECK_THROWS_AS(openssl.seal_aes256gcm("short", nonce, "", "x"), std::invalid_argument);
}

TEST_CASE("Ed25519 keys read from PEM and DER, other key types are named and refused", "[crypto]") {
    const crypto::OpenSsl& openssl = crypto::openssl();
    // RFC 8032 test 1's public key, as a PEM SubjectPublicKeyInfo.
    const std::string pem = "-----BEGIN PUBLIC KEY-----\n"
                            "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
                            "-----END PUBLIC KEY-----\n";
    const std::string raw = openssl.ed25519_public_key_from_pem(pem);
    CHECK(crypto::hex(raw) == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    // RFC 8032 test 1: the empty message.
    const std::string signature_hex = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                                      "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
    std::string signature;
    for (std::size_t i = 0; i < signature_hex.size(); i += 2)
        signature += static_cast<char>(std::stoi(signature_hex.substr(i, 2), nullptr, 16));
    CHECK(openssl.ed25519_verify(raw, "", signature));
    CHECK_FALSE(openssl.ed25519_verify(raw, "x", signature));
    CHECK_FALSE(openssl.ed25519_verify(raw, "", signature.substr(1)));
    CHECK_THROWS_AS(openssl.ed25519_public_key_from_pem("not a key"), std::invalid_argument);
    CHECK_THROWS_AS(openssl.ed25519_public_key_from_der("not a key"), std::invalid_argument);
    CHECK_THROWS_AS(openssl.ed25519_sign("not a key", "message"), std::invalid_argument);
}
