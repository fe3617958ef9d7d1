#include "session/rule_code.hpp"

#include "crypto/bytes.hpp"
#include "crypto/openssl.hpp"

namespace gatehouse::session {

std::string accepted_rules_key(std::string_view tool, std::string_view rules) {
    return std::string(tool) + "#" + crypto::sha256_hex(rules).substr(0, 16);
}

std::string rule_code(std::string_view nonce, std::string_view rules_key) {
    const crypto::Digest mac = crypto::openssl().hmac_sha256(nonce, rules_key);
    return crypto::hex(crypto::as_text(mac).substr(0, 8));
}

bool same_code(std::string_view a, std::string_view b) {
    return crypto::equal_in_constant_time(a, b);
}

} // namespace gatehouse::session
