#include "session/rule_code.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace gatehouse::session {

std::string rule_code(std::string_view nonce, std::string_view tool) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (!HMAC(EVP_sha256(), nonce.data(), static_cast<int>(nonce.size()),
              reinterpret_cast<const unsigned char*>(tool.data()), tool.size(), mac, &length))
        throw std::runtime_error("HMAC-SHA256 failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string code;
    for (unsigned int i = 0; i < 8 && i < length; ++i) {
        code += kHex[mac[i] >> 4];
        code += kHex[mac[i] & 0xf];
    }
    return code;
}

bool same_code(std::string_view a, std::string_view b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace gatehouse::session
