#pragma once

#include "license/license_document.hpp"
#include "license/vendor_key.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::license {

// What one license file proves, before the clock and the family are asked.
struct LicenseVerdict {
    enum class Status {
        missing, // no file where the configuration says
        invalid, // unreadable, malformed, unknown key or a signature that does not match
        valid,   // signed by a configured vendor key (it may still be expired)
    };
    Status status = Status::missing;
    std::string problem;                     // why not valid, for the log and `license verify`
    std::optional<LicenseDocument> document; // when the form was right (also when the signature is not)
    std::string key_fingerprint;             // the verifying key's, when valid

    bool valid() const { return status == Status::valid; }
};

// Checks the form and the signature of a license file's text against the
// configured vendor keys. Never throws for anything in the text.
LicenseVerdict verify_license(std::string_view text, const VendorKeys& keys);

} // namespace gatehouse::license
