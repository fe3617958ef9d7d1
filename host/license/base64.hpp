#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::license {

// Standard base64 (RFC 4648 §4) with '=' padding.
std::string base64_encode(std::string_view bytes);

// Strict decoding: whitespace is skipped (PEM bodies and YAML folded
// scalars wrap lines), anything else outside the alphabet, a wrong padding or
// a length that is not a multiple of four is refused with nullopt.
std::optional<std::string> base64_decode(std::string_view text);

} // namespace gatehouse::license
