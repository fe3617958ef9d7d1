// gatehouse-openssl.so: the host's one user of libcrypto and libssl
// (crypto/openssl.hpp says why it is a module of its own).

#include "crypto/openssl.hpp"

#include "auth/asio_http_fetcher.hpp"
#include "crypto/asio_tls_tunnel.hpp"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <stdexcept>

namespace gatehouse::crypto {

namespace {

constexpr std::size_t kEd25519KeyBytes = 32;
constexpr std::size_t kEd25519SignatureBytes = 64;
constexpr std::size_t kGcmNonceBytes = 12;
constexpr std::size_t kGcmTagBytes = 16;
constexpr std::size_t kAes256KeyBytes = 32;

const unsigned char* bytes_of(std::string_view s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

using Key = std::shared_ptr<EVP_PKEY>;
using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;
using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;
using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using ParamBuild = std::unique_ptr<OSSL_PARAM_BLD, decltype(&OSSL_PARAM_BLD_free)>;
using Params = std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)>;
using PkeyContext = std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)>;
using Bignum = std::unique_ptr<BIGNUM, decltype(&BN_free)>;

Key owned(EVP_PKEY* key) {
    return {key, EVP_PKEY_free};
}

DigestContext digest_context() {
    DigestContext ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx) throw std::runtime_error("OpenSSL could not allocate a digest context");
    return ctx;
}

CipherContext cipher_context() {
    CipherContext ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
    if (!ctx) throw std::runtime_error("OpenSSL could not allocate a cipher context");
    return ctx;
}

Bio memory_bio(std::string_view text) {
    Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), BIO_free);
    if (!bio) throw std::runtime_error("out of memory");
    return bio;
}

bool verify_signature(EVP_PKEY* key, const EVP_MD* digest, std::string_view message, std::string_view signature) {
    DigestContext ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, digest, nullptr, key) != 1) return false;
    return EVP_DigestVerify(ctx.get(), bytes_of(signature), signature.size(), bytes_of(message), message.size()) == 1;
}

std::string raw_ed25519(const Key& key) {
    if (!key) throw std::invalid_argument("is not a usable Ed25519 public key");
    if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_ED25519) {
        const char* type = EVP_PKEY_get0_type_name(key.get());
        throw std::invalid_argument(std::string("is a ") + (type ? type : "non-Ed25519") +
                                    " key; licenses are signed with Ed25519 keys only");
    }
    std::string raw(kEd25519KeyBytes, '\0');
    std::size_t length = raw.size();
    if (EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(raw.data()), &length) != 1 ||
        length != kEd25519KeyBytes)
        throw std::invalid_argument("is not a usable Ed25519 public key");
    return raw;
}

Key key_from_params(const char* type, OSSL_PARAM* params) {
    PkeyContext ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr), EVP_PKEY_CTX_free);
    EVP_PKEY* key = nullptr;
    if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
        EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params) != 1 || !key)
        throw std::invalid_argument(std::string("OpenSSL refused the ") + type + " key");
    return owned(key);
}

Bignum bignum(std::string_view bytes) {
    return Bignum(BN_bin2bn(bytes_of(bytes), static_cast<int>(bytes.size()), nullptr), BN_free);
}

// JWS carries ES256 signatures as R||S; OpenSSL verifies DER.
std::string ecdsa_der(std::string_view raw) {
    if (raw.size() != 64) return {};
    std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(ECDSA_SIG_new(), ECDSA_SIG_free);
    BIGNUM* r = BN_bin2bn(bytes_of(raw), 32, nullptr);
    BIGNUM* s = BN_bin2bn(bytes_of(raw) + 32, 32, nullptr);
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

class Rs256Key final : public VerifyingKey {
public:
    explicit Rs256Key(Key key) : key_(std::move(key)) {}
    bool verify(std::string_view message, std::string_view signature) const override {
        return verify_signature(key_.get(), EVP_sha256(), message, signature);
    }

private:
    Key key_;
};

class Es256Key final : public VerifyingKey {
public:
    explicit Es256Key(Key key) : key_(std::move(key)) {}
    bool verify(std::string_view message, std::string_view signature) const override {
        const std::string der = ecdsa_der(signature);
        return !der.empty() && verify_signature(key_.get(), EVP_sha256(), message, der);
    }

private:
    Key key_;
};

class Ed25519Key final : public VerifyingKey {
public:
    explicit Ed25519Key(Key key) : key_(std::move(key)) {}
    bool verify(std::string_view message, std::string_view signature) const override {
        return signature.size() == kEd25519SignatureBytes && verify_signature(key_.get(), nullptr, message, signature);
    }

private:
    Key key_;
};

Key ed25519_from_raw(std::string_view raw) {
    auto key = owned(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, bytes_of(raw), raw.size()));
    if (!key) throw std::invalid_argument("OpenSSL refused the Ed25519 key");
    return key;
}

class OpenSslModule final : public OpenSsl {
public:
    Digest sha256(std::string_view bytes) const override {
        Digest out;
        unsigned int length = 0;
        if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &length, EVP_sha256(), nullptr) != 1 ||
            length != out.size())
            throw std::runtime_error("SHA-256 failed");
        return out;
    }

    Digest hmac_sha256(std::string_view key, std::string_view message) const override {
        Digest out;
        unsigned int length = 0;
        if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), bytes_of(message), message.size(), out.data(),
                  &length) ||
            length != out.size())
            throw std::runtime_error("HMAC-SHA256 failed");
        return out;
    }

    std::string seal_aes256gcm(std::string_view key, std::string_view nonce, std::string_view associated,
                               std::string_view plaintext) const override {
        check_gcm_sizes(key, nonce);
        std::string sealed(plaintext.size() + kGcmTagBytes, '\0');
        auto* out = reinterpret_cast<unsigned char*>(sealed.data());
        auto ctx = cipher_context();
        int len = 0;
        int total = 0;
        if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kGcmNonceBytes, nullptr) != 1 ||
            EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, bytes_of(key), bytes_of(nonce)) != 1 ||
            EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes_of(associated), static_cast<int>(associated.size())) !=
                1 ||
            EVP_EncryptUpdate(ctx.get(), out, &len, bytes_of(plaintext), static_cast<int>(plaintext.size())) != 1)
            throw std::runtime_error("OpenSSL could not seal");
        total = len;
        if (EVP_EncryptFinal_ex(ctx.get(), out + total, &len) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kGcmTagBytes, out + plaintext.size()) != 1)
            throw std::runtime_error("OpenSSL could not seal");
        return sealed;
    }

    std::optional<std::string> open_aes256gcm(std::string_view key, std::string_view nonce, std::string_view associated,
                                              std::string_view sealed) const override {
        check_gcm_sizes(key, nonce);
        if (sealed.size() < kGcmTagBytes) return std::nullopt;
        const std::size_t cipher_len = sealed.size() - kGcmTagBytes;
        std::string plain(cipher_len, '\0');
        std::string tag(sealed.substr(cipher_len));
        auto* out = reinterpret_cast<unsigned char*>(plain.data());
        auto ctx = cipher_context();
        int len = 0;
        int final_len = 0;
        if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kGcmNonceBytes, nullptr) != 1 ||
            EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, bytes_of(key), bytes_of(nonce)) != 1 ||
            EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes_of(associated), static_cast<int>(associated.size())) !=
                1 ||
            EVP_DecryptUpdate(ctx.get(), out, &len, bytes_of(sealed), static_cast<int>(cipher_len)) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kGcmTagBytes, tag.data()) != 1 ||
            EVP_DecryptFinal_ex(ctx.get(), out + len, &final_len) != 1)
            return std::nullopt;
        return plain;
    }

    std::string ed25519_public_key_from_pem(std::string_view pem) const override {
        auto bio = memory_bio(pem);
        auto key = owned(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
        if (!key) throw std::invalid_argument("is not a readable PEM PUBLIC KEY block");
        return raw_ed25519(key);
    }

    std::string ed25519_public_key_from_der(std::string_view der) const override {
        const unsigned char* p = bytes_of(der);
        auto key = owned(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
        if (!key || p != bytes_of(der) + der.size())
            throw std::invalid_argument("is " + std::to_string(der.size()) +
                                        " bytes of base64 but not a DER SubjectPublicKeyInfo");
        return raw_ed25519(key);
    }

    bool ed25519_verify(std::string_view public_key, std::string_view message,
                        std::string_view signature) const override {
        return Ed25519Key(ed25519_from_raw(public_key)).verify(message, signature);
    }

    std::string ed25519_sign(std::string_view private_key_pem, std::string_view message) const override {
        auto bio = memory_bio(private_key_pem);
        // A passphrase callback that gives none: an encrypted key is refused
        // here, never asked for on a terminal by OpenSSL's default one.
        const auto no_passphrase = [](char*, int, int, void*) -> int { return 0; };
        auto key = owned(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
        if (!key) throw std::invalid_argument("the signing key is not a readable, unencrypted PEM private key");
        if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_ED25519)
            throw std::invalid_argument("the signing key is not an Ed25519 key");
        std::string signature(kEd25519SignatureBytes, '\0');
        std::size_t length = signature.size();
        auto ctx = digest_context();
        if (EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
            EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, bytes_of(message),
                           message.size()) != 1)
            throw std::runtime_error("signing failed");
        signature.resize(length);
        return signature;
    }

    std::shared_ptr<const VerifyingKey> rs256_key(std::string_view n, std::string_view e) const override {
        const auto modulus = bignum(n);
        const auto exponent = bignum(e);
        if (!modulus || !exponent) throw std::runtime_error("out of memory");
        if (BN_num_bits(modulus.get()) < 2048) throw std::invalid_argument("the RSA key is shorter than 2048 bits");
        ParamBuild build(OSSL_PARAM_BLD_new(), OSSL_PARAM_BLD_free);
        if (!build || OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, modulus.get()) != 1 ||
            OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, exponent.get()) != 1)
            throw std::invalid_argument("OpenSSL refused the RSA key");
        Params params(OSSL_PARAM_BLD_to_param(build.get()), OSSL_PARAM_free);
        return std::make_shared<Rs256Key>(key_from_params("RSA", params.get()));
    }

    std::shared_ptr<const VerifyingKey> es256_key(std::string_view x, std::string_view y) const override {
        if (x.size() != 32 || y.size() != 32) throw std::invalid_argument("a P-256 key has 32-byte x and y");
        std::string point = "\x04" + std::string(x) + std::string(y);
        ParamBuild build(OSSL_PARAM_BLD_new(), OSSL_PARAM_BLD_free);
        if (!build || OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
            OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
            throw std::invalid_argument("OpenSSL refused the EC key");
        Params params(OSSL_PARAM_BLD_to_param(build.get()), OSSL_PARAM_free);
        return std::make_shared<Es256Key>(key_from_params("EC", params.get()));
    }

    std::shared_ptr<const VerifyingKey> ed25519_key(std::string_view x) const override {
        return std::make_shared<Ed25519Key>(ed25519_from_raw(x));
    }

    std::unique_ptr<auth::HttpFetcher> http_fetcher(std::chrono::milliseconds timeout,
                                                    const TlsClientOptions& tls) const override {
        return auth::make_asio_http_fetcher(timeout, tls);
    }

    std::shared_ptr<const TlsConnector> tls_connector(const TlsClientOptions& options) const override {
        return make_asio_tls_connector(options);
    }

private:
    static void check_gcm_sizes(std::string_view key, std::string_view nonce) {
        if (key.size() != kAes256KeyBytes || nonce.size() != kGcmNonceBytes)
            throw std::invalid_argument("AES-256-GCM takes a 32-byte key and a 12-byte nonce");
    }
};

} // namespace

} // namespace gatehouse::crypto

extern "C" {

const char* gatehouse_openssl_build() {
    return GATEHOUSE_OPENSSL_BUILD;
}

const gatehouse::crypto::OpenSsl* gatehouse_openssl() {
    static const gatehouse::crypto::OpenSslModule module;
    return &module;
}
}
