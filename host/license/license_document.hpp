#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::license {

// What a license file says, read and checked for form (docs/licenses.md):
//
//   {
//     "format":    "gatehouse-license-v1",
//     "licensee":  "Corner Shop Ltd",
//     "families":  ["orders", "ledger"],
//     "issued":    "2026-11-30T00:00:00Z",
//     "expires":   "2027-11-30T00:00:00Z",
//     "key_id":    "acme-2026",
//     "signature": "<base64 of the 64-byte Ed25519 signature over signed_bytes()>"
//   }
//
// Every field is required and no other is allowed: whatever the file says is
// signed, so nothing unsigned can ride along and look authoritative.
struct LicenseDocument {
    static constexpr std::string_view kFormat = "gatehouse-license-v1";

    std::string licensee;
    std::vector<std::string> families; // in the order written; the signed bytes keep it
    std::string issued_text;           // as written, e.g. 2026-11-30T00:00:00Z
    std::string expires_text;
    std::chrono::system_clock::time_point issued;
    std::chrono::system_clock::time_point expires;
    std::string key_id;
    std::string signature; // the 64 raw bytes

    // Exactly the bytes the vendor signs: six lines, each ending in "\n":
    //   gatehouse-license-v1
    //   licensee:<licensee>
    //   families:<family>,<family>,...
    //   issued:<issued>
    //   expires:<expires>
    //   key_id:<key_id>
    // No field may hold a line break or a control character, and a family name
    // no comma, so the lines cannot be forged by shifting text between fields.
    std::string signed_bytes() const;

    bool covers(std::string_view family) const;
    bool expired_at(std::chrono::system_clock::time_point now) const { return now >= expires; }
};

// The file is not a license: names the field and what is wrong with it.
class LicenseFormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Reads the JSON text of a license file. Checks its form only, not its
// signature (see verify_license). Throws LicenseFormatError.
LicenseDocument parse_license_document(std::string_view text);

// A family or key id: 1 to 64 of letters, digits, '_', '-', '.'.
bool valid_license_name(std::string_view name);

// Families, key ids or file names as one line for people: "a, b, c".
std::string joined(const std::vector<std::string>& items);

} // namespace gatehouse::license
