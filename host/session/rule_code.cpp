#include "session/rule_code.hpp"

#include "crypto/bytes.hpp"
#include "crypto/openssl.hpp"

namespace gatehouse::session {

std::string rule_code(std::string_view nonce, std::string_view tool) {
    const crypto::Digest mac = crypto::openssl().hmac_sha256(nonce, tool);
    return crypto::hex(crypto::as_text(mac).substr(0, 8));
}

bool same_code(std::string_view a, std::string_view b) {
    return crypto::equal_in_constant_time(a, b);
}

} // namespace gatehouse::session
