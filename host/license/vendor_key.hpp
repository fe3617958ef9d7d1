#pragma once

#include <map>
#include <string>
#include <string_view>

namespace gatehouse::license {

// A vendor's Ed25519 public key, as the operator pasted it into the YAML.
// Immutable after parse and safe to share between threads.
class VendorKey {
public:
    // Accepts a PEM `PUBLIC KEY` block, or base64 of either the 32 raw key
    // bytes or the 44-byte DER SubjectPublicKeyInfo (the body of that PEM).
    // Throws std::invalid_argument with a sentence saying what is wrong; a
    // private key is refused with a warning rather than read.
    static VendorKey parse(std::string_view text);

    // True when `signature` (64 bytes) is this key's Ed25519 signature of `message`.
    bool verify(std::string_view message, std::string_view signature) const;

    // The 32 raw public key bytes, base64: public, printed by `license verify`.
    std::string public_base64() const;

    // The first 8 bytes of SHA-256 over the raw key, hex: a short name for logs.
    std::string fingerprint() const;

private:
    explicit VendorKey(std::string raw) : raw_(std::move(raw)) {}
    std::string raw_; // the 32 bytes of the public key
};

// Key id (as a license's `key_id` names it) -> key.
using VendorKeys = std::map<std::string, VendorKey>;

} // namespace gatehouse::license
