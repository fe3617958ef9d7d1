#pragma once

#include <string>
#include <string_view>

namespace gatehouse::session {

// What a session records when it accepts a tool's rules: the tool's name
// and a digest of the rules' text, so rules the operator changes (a re-read
// configuration) are accepted again before the tool runs, where accepting a
// name alone would have stood for rules never shown.
std::string accepted_rules_key(std::string_view tool, std::string_view rules);

// The code that accepts a tool's rules in one session:
// HMAC-SHA256(key = the session's nonce, message = accepted_rules_key), first
// 8 bytes as hex. Another session has another nonce, so its codes never fit;
// other rules have another key, so a code shown for them never fits either.
std::string rule_code(std::string_view nonce, std::string_view rules_key);

// Compares two codes in time that does not depend on where they differ.
bool same_code(std::string_view a, std::string_view b);

} // namespace gatehouse::session
