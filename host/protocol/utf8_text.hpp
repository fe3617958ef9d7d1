#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::protocol {

// Where `text` stops being well-formed UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF): the offset of the first byte that
// starts no valid sequence, or nothing when all of it is UTF-8.
std::optional<std::size_t> first_non_utf8(std::string_view text);

// The first bytes of `text`, at most `limit` of them, ending before a UTF-8
// continuation byte: what is kept of UTF-8 stays UTF-8, so the JSON it is
// written into (a message, a log line) can carry it.
std::string_view utf8_prefix(std::string_view text, std::size_t limit);

// `text` as it is when it fits in `limit` bytes; else its utf8_prefix and
// "…" after it, with `suffix` (say, the whole size) after that.
std::string cut_utf8(std::string_view text, std::size_t limit, std::string_view suffix = {});

// What another program wrote, to be quoted in a sentence of the host's (a
// log line, an error): cut_utf8 to `limit`, every control character (a
// newline that would start a line of its own in the log) a space.
std::string quoted_text(std::string_view text, std::size_t limit);

} // namespace gatehouse::protocol
