#pragma once

#include <string>
#include <string_view>

namespace gatehouse::auth {

// Lower-case hex SHA-256 of `text`: how tokens and API keys are remembered
// without being kept.
std::string sha256_hex(std::string_view text);

} // namespace gatehouse::auth
