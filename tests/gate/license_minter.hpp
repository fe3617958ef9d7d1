#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

typedef struct evp_pkey_st EVP_PKEY;

namespace gatehouse::test {

// A vendor's Ed25519 key pair, generated when the test runs: no private key
// is ever committed. Written against OpenSSL directly, not the host's
// license code, so the tests check the host against the documented format.
class VendorKeyPair {
public:
    VendorKeyPair();

    std::string public_base64() const; // the 32 raw bytes
    std::string public_pem() const;    // -----BEGIN PUBLIC KEY-----
    std::string private_pem() const;   // PKCS#8, for `gatehouse license sign`
    std::string sign(std::string_view message) const;
    bool verify(std::string_view message, std::string_view signature) const;

private:
    std::shared_ptr<EVP_PKEY> key_;
};

struct LicenseFields {
    std::string licensee = "Corner Shop Ltd";
    std::vector<std::string> families = {"gated"};
    std::string issued = "2026-01-01T00:00:00Z";
    std::string expires = "2199-01-01T00:00:00Z";
    std::string key_id = "acme-2026";
};

// docs/licenses.md: the six lines a vendor signs.
std::string license_signed_bytes(const LicenseFields& fields);

// A license file's JSON text, signed with `key`.
std::string mint_license(const VendorKeyPair& key, const LicenseFields& fields);

// YYYY-MM-DDTHH:MM:SSZ for now + offset.
std::string utc_from_now(std::chrono::seconds offset);

std::string base64(std::string_view bytes);

} // namespace gatehouse::test
