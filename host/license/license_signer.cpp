#include "license/license_signer.hpp"

#include "crypto/openssl.hpp"
#include "license/base64.hpp"

#include <nlohmann/json.hpp>

namespace gatehouse::license {

void sign_license(LicenseDocument& document, std::string_view private_key_pem) {
    document.signature = crypto::openssl().ed25519_sign(private_key_pem, document.signed_bytes());
}

std::string license_file_text(const LicenseDocument& d) {
    // ordered_json keeps the documented field order, for a reader's sake;
    // the signature does not depend on it.
    nlohmann::ordered_json out;
    out["format"] = LicenseDocument::kFormat;
    out["licensee"] = d.licensee;
    out["families"] = d.families;
    out["issued"] = d.issued_text;
    out["expires"] = d.expires_text;
    out["key_id"] = d.key_id;
    out["signature"] = base64_encode(d.signature);
    return out.dump(2) + "\n";
}

} // namespace gatehouse::license
