#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sessions_bot {

// `bytes` bytes from the kernel's generator as lowercase hex; throws when the
// generator cannot deliver (a link or a code must never be guessable).
std::string random_hex(std::size_t bytes);

// A random version 4 UUID, lowercase.
std::string random_uuid();

// SHA-256 of `text` as lowercase hex: what is stored in place of a code or a
// token, so a copy of the state backend lets nobody use them.
std::string sha256_hex(std::string_view text);

} // namespace sessions_bot
