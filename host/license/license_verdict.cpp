#include "license/license_verdict.hpp"

#include <exception>
#include <string>

namespace gatehouse::license {

LicenseVerdict verify_license(std::string_view text, const VendorKeys& keys) {
    LicenseVerdict v;
    v.status = LicenseVerdict::Status::invalid;
    try {
        v.document = parse_license_document(text);
    } catch (const LicenseFormatError& e) {
        v.problem = e.what();
        return v;
    }
    const auto& d = *v.document;
    auto key = keys.find(d.key_id);
    if (key == keys.end()) {
        std::string known;
        for (const auto& [id, k] : keys)
            known += (known.empty() ? "" : ", ") + id;
        v.problem = "it is signed with key \"" + d.key_id + "\", which is not among the configured vendor keys (" +
                    (known.empty() ? "none are configured" : "configured: " + known) + ")";
        return v;
    }
    bool signed_so = false;
    try {
        signed_so = key->second.verify(d.signed_bytes(), d.signature);
    } catch (const std::exception& e) {
        // The crypto module did not open: the license is not taken as valid,
        // and the verdict says why, as its callers promise never to throw.
        v.problem = std::string("its signature could not be checked: ") + e.what();
        return v;
    }
    if (!signed_so) {
        v.problem = "its signature does not match its content under key \"" + d.key_id +
                    "\" (the file was changed after signing, or signed with another key)";
        return v;
    }
    v.status = LicenseVerdict::Status::valid;
    v.key_fingerprint = key->second.fingerprint();
    return v;
}

} // namespace gatehouse::license
