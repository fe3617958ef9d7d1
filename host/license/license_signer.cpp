#include "license/license_signer.hpp"

#include "license/base64.hpp"

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <stdexcept>

namespace gatehouse::license {

void sign_license(LicenseDocument& document, std::string_view private_key_pem) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())), BIO_free);
    if (!bio) throw std::runtime_error("out of memory");
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
    if (!key) throw std::invalid_argument("the signing key is not a readable, unencrypted PEM private key");
    if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_ED25519)
        throw std::invalid_argument("the signing key is not an Ed25519 key");
    const std::string message = document.signed_bytes();
    unsigned char signature[64];
    std::size_t length = sizeof signature;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
        EVP_DigestSign(ctx.get(), signature, &length, reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1)
        throw std::runtime_error("signing failed");
    document.signature.assign(reinterpret_cast<const char*>(signature), length);
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
