#pragma once

#include <string>
#include <string_view>

namespace gatehouse::session {

// The code that accepts a tool's rules in one session:
// HMAC-SHA256(key = the session's nonce, message = the tool name), first 8
// bytes as hex. Another session has another nonce, so its codes never fit.
std::string rule_code(std::string_view nonce, std::string_view tool);

// Compares two codes in time that does not depend on where they differ.
bool same_code(std::string_view a, std::string_view b);

} // namespace gatehouse::session
