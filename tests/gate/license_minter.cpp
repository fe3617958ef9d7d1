#include "license_minter.hpp"

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <ctime>
#include <stdexcept>

namespace gatehouse::test {

namespace {

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

} // namespace

VendorKeyPair::VendorKeyPair() {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (!key) throw std::runtime_error("cannot generate an Ed25519 key");
    key_.reset(key, EVP_PKEY_free);
}

std::string VendorKeyPair::public_base64() const {
    unsigned char raw[32];
    std::size_t len = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key_.get(), raw, &len) != 1) throw std::runtime_error("no raw public key");
    return base64({reinterpret_cast<const char*>(raw), len});
}

std::string VendorKeyPair::public_pem() const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    PEM_write_bio_PUBKEY(bio.get(), key_.get());
    return bio_text(bio.get());
}

std::string VendorKeyPair::private_pem() const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr);
    return bio_text(bio.get());
}

std::string VendorKeyPair::sign(std::string_view message) const {
    unsigned char signature[64];
    std::size_t len = sizeof signature;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), signature, &len, reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1)
        throw std::runtime_error("cannot sign");
    return std::string(reinterpret_cast<const char*>(signature), len);
}

bool VendorKeyPair::verify(std::string_view message, std::string_view signature) const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    return EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) == 1 &&
           EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

std::string license_signed_bytes(const LicenseFields& f) {
    std::string families;
    for (const auto& family : f.families)
        families += (families.empty() ? "" : ",") + family;
    return "gatehouse-license-v1\nlicensee:" + f.licensee + "\nfamilies:" + families + "\nissued:" + f.issued +
           "\nexpires:" + f.expires + "\nkey_id:" + f.key_id + "\n";
}

std::string mint_license(const VendorKeyPair& key, const LicenseFields& f) {
    const nlohmann::json doc = {{"format", "gatehouse-license-v1"},
                                {"licensee", f.licensee},
                                {"families", f.families},
                                {"issued", f.issued},
                                {"expires", f.expires},
                                {"key_id", f.key_id},
                                {"signature", base64(key.sign(license_signed_bytes(f)))}};
    return doc.dump(2) + "\n";
}

std::string utc_from_now(std::chrono::seconds offset) {
    const std::time_t t = std::time(nullptr) + offset.count();
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

std::string base64(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

} // namespace gatehouse::test
