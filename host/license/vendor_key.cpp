#include "license/vendor_key.hpp"

#include "license/base64.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <stdexcept>

namespace gatehouse::license {

namespace {

constexpr std::size_t kRawKeyBytes = 32;
constexpr std::size_t kSpkiBytes = 44;
constexpr std::size_t kSignatureBytes = 64;

std::shared_ptr<EVP_PKEY> owned(EVP_PKEY* key) {
    return {key, EVP_PKEY_free};
}

std::shared_ptr<EVP_PKEY> from_pem(std::string_view text) {
    if (text.find("PRIVATE KEY") != std::string_view::npos)
        throw std::invalid_argument("this is a PRIVATE key: put only the vendor's public key here, and keep the "
                                    "private key away from this machine");
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
                                                  BIO_free);
    if (!bio) throw std::runtime_error("out of memory");
    auto key = owned(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
    if (!key) throw std::invalid_argument("is not a readable PEM PUBLIC KEY block");
    return key;
}

std::shared_ptr<EVP_PKEY> from_base64(std::string_view text) {
    const auto bytes = base64_decode(text);
    if (!bytes)
        throw std::invalid_argument("is neither a PEM PUBLIC KEY block nor base64 (a character outside the base64 "
                                    "alphabet, or a wrong length or padding)");
    const auto* data = reinterpret_cast<const unsigned char*>(bytes->data());
    if (bytes->size() == kRawKeyBytes)
        return owned(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, data, bytes->size()));
    if (bytes->size() == kSpkiBytes) {
        const unsigned char* p = data;
        auto key = owned(d2i_PUBKEY(nullptr, &p, static_cast<long>(bytes->size())));
        if (!key || p != data + bytes->size())
            throw std::invalid_argument("is 44 bytes of base64 but not a DER SubjectPublicKeyInfo");
        return key;
    }
    if (bytes->size() == 48)
        throw std::invalid_argument("looks like a base64 Ed25519 PRIVATE key (48 bytes of PKCS#8): put only the "
                                    "vendor's public key here");
    throw std::invalid_argument("decodes to " + std::to_string(bytes->size()) +
                                " bytes; an Ed25519 public key is 32 raw bytes or a 44-byte DER "
                                "SubjectPublicKeyInfo");
}

} // namespace

VendorKey::VendorKey(std::shared_ptr<EVP_PKEY> key) : key_(std::move(key)) {}

VendorKey VendorKey::parse(std::string_view text) {
    auto key = text.find("-----BEGIN") != std::string_view::npos ? from_pem(text) : from_base64(text);
    if (!key) throw std::invalid_argument("is not a usable Ed25519 public key");
    if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_ED25519) {
        const char* type = EVP_PKEY_get0_type_name(key.get());
        throw std::invalid_argument(std::string("is a ") + (type ? type : "non-Ed25519") +
                                    " key; licenses are signed with Ed25519 keys only");
    }
    return VendorKey(std::move(key));
}

bool VendorKey::verify(std::string_view message, std::string_view signature) const {
    if (signature.size() != kSignatureBytes) return false;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1) return false;
    return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

std::string VendorKey::public_base64() const {
    unsigned char raw[kRawKeyBytes];
    std::size_t len = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key_.get(), raw, &len) != 1) return {};
    return base64_encode({reinterpret_cast<const char*>(raw), len});
}

std::string VendorKey::fingerprint() const {
    unsigned char raw[kRawKeyBytes];
    std::size_t len = sizeof raw;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    if (EVP_PKEY_get_raw_public_key(key_.get(), raw, &len) != 1 ||
        EVP_Digest(raw, len, digest, &digest_len, EVP_sha256(), nullptr) != 1)
        return "?";
    std::string hex;
    char byte[3];
    for (unsigned i = 0; i < 8 && i < digest_len; ++i) {
        std::snprintf(byte, sizeof byte, "%02x", digest[i]);
        hex += byte;
    }
    return hex;
}

} // namespace gatehouse::license
