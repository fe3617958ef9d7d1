#include "license/vendor_key.hpp"

#include "crypto/bytes.hpp"
#include "crypto/openssl.hpp"
#include "license/base64.hpp"

#include <stdexcept>

namespace gatehouse::license {

namespace {

constexpr std::size_t kRawKeyBytes = 32;
constexpr std::size_t kSpkiBytes = 44;

std::string from_pem(std::string_view text) {
    if (text.find("PRIVATE KEY") != std::string_view::npos)
        throw std::invalid_argument("this is a PRIVATE key: put only the vendor's public key here, and keep the "
                                    "private key away from this machine");
    return crypto::openssl().ed25519_public_key_from_pem(text);
}

std::string from_base64(std::string_view text) {
    auto bytes = base64_decode(text);
    if (!bytes)
        throw std::invalid_argument("is neither a PEM PUBLIC KEY block nor base64 (a character outside the base64 "
                                    "alphabet, or a wrong length or padding)");
    // 32 raw bytes need no parsing, so the common form costs no OpenSSL at start.
    if (bytes->size() == kRawKeyBytes) return std::move(*bytes);
    if (bytes->size() == kSpkiBytes) return crypto::openssl().ed25519_public_key_from_der(*bytes);
    if (bytes->size() == 48)
        throw std::invalid_argument("looks like a base64 Ed25519 PRIVATE key (48 bytes of PKCS#8): put only the "
                                    "vendor's public key here");
    throw std::invalid_argument("decodes to " + std::to_string(bytes->size()) +
                                " bytes; an Ed25519 public key is 32 raw bytes or a 44-byte DER "
                                "SubjectPublicKeyInfo");
}

} // namespace

VendorKey VendorKey::parse(std::string_view text) {
    return VendorKey(text.find("-----BEGIN") != std::string_view::npos ? from_pem(text) : from_base64(text));
}

bool VendorKey::verify(std::string_view message, std::string_view signature) const {
    return crypto::openssl().ed25519_verify(raw_, message, signature);
}

std::string VendorKey::public_base64() const {
    return base64_encode(raw_);
}

std::string VendorKey::fingerprint() const {
    return crypto::sha256_hex(raw_).substr(0, 16);
}

} // namespace gatehouse::license
