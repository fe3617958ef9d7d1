#pragma once

// What the JSON reader and the JSON writers ask of a byte, and how they
// append a run of bytes, kept in one place.

#include <array>
#include <cstddef>
#include <string>

namespace gatehouse::protocol::json_bytes {

// Bytes a JSON string holds as they are, on the wire and in memory alike:
// printable ASCII but the quote and the backslash. Anything else stops a
// quick scan of a string and is looked at alone.
constexpr std::array<bool, 256> plain_table() {
    std::array<bool, 256> plain{};
    for (int c = 0x20; c < 0x80; ++c)
        plain[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
    return plain;
}
inline constexpr std::array<bool, 256> kPlain = plain_table();

inline unsigned byte(char c) {
    return static_cast<unsigned char>(c);
}

inline bool plain(char c) {
    return kPlain[byte(c)];
}

// Appends the bytes [from, to) by their length, which std::string copies at
// once; its iterator-pair append goes through the general replace.
inline void append_bytes(std::string& out, const char* from, const char* to) {
    out.append(from, static_cast<std::size_t>(to - from));
}

// The length of the well-formed UTF-8 sequence at `p` (RFC 3629, table 3-7
// of Unicode: no overlong forms, no surrogates, nothing past U+10FFFF), or 0.
inline std::size_t utf8_sequence(const char* p, const char* end) {
    const unsigned lead = byte(*p);
    const auto follows = [&](std::size_t i, unsigned low = 0x80, unsigned high = 0xBF) {
        return p + i < end && byte(p[i]) >= low && byte(p[i]) <= high;
    };
    if (lead >= 0xC2 && lead <= 0xDF) return follows(1) ? 2 : 0;
    if (lead == 0xE0) return follows(1, 0xA0) && follows(2) ? 3 : 0;
    if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) return follows(1) && follows(2) ? 3 : 0;
    if (lead == 0xED) return follows(1, 0x80, 0x9F) && follows(2) ? 3 : 0;
    if (lead == 0xF0) return follows(1, 0x90) && follows(2) && follows(3) ? 4 : 0;
    if (lead >= 0xF1 && lead <= 0xF3) return follows(1) && follows(2) && follows(3) ? 4 : 0;
    if (lead == 0xF4) return follows(1, 0x80, 0x8F) && follows(2) && follows(3) ? 4 : 0;
    return 0;
}

} // namespace gatehouse::protocol::json_bytes
