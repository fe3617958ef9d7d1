#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace gatehouse::protocol {

// Opaque pagination cursors: the position in a list plus the fingerprint of
// the list they were cut from, so a cursor never silently skips or repeats
// entries of a list that changed. Anything else is refused as invalid.
std::string encode_cursor(const std::string& fingerprint, std::size_t offset);
std::optional<std::size_t> decode_cursor(const std::string& cursor, const std::string& fingerprint);

} // namespace gatehouse::protocol
