#pragma once

#include "license/license_document.hpp"

#include <string>
#include <string_view>

namespace gatehouse::license {

// The vendor's side, for `gatehouse license sign`: fills `signature` of a
// document whose other fields are set, with the Ed25519 private key in
// `private_key_pem` (PKCS#8 PEM, as `openssl genpkey -algorithm ed25519`
// writes it). Throws std::invalid_argument naming what is wrong. The key
// text is neither kept nor logged.
void sign_license(LicenseDocument& document, std::string_view private_key_pem);

// The license file's JSON text, fields in their documented order, with a
// final newline.
std::string license_file_text(const LicenseDocument& document);

} // namespace gatehouse::license
