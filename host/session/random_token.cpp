#include "session/random_token.hpp"

#include "crypto/bytes.hpp"
#include "crypto/random_bytes.hpp"

namespace gatehouse::session {

std::string random_token(std::size_t bytes) {
    return crypto::hex(crypto::random_bytes(bytes));
}

} // namespace gatehouse::session
