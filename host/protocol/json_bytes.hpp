#pragma once

// What the JSON reader and the JSON writers ask of a byte, and how they
// append a run of bytes, kept in one place.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The first byte at or after `p` that is not plain, or `end`. Eight bytes
// are looked at together: a word with no byte below 0x20, none past ASCII,
// no quote and no backslash (the tests of "Bit Twiddling Hacks") is passed
// whole. In a word that holds a stop, each test may also flag bytes after
// the first one it finds (a borrow runs upwards, towards later bytes in
// memory on this little-endian machine), never one before: the lowest flag
// is the first stop. The last bytes, fewer than eight, go one at a time.
inline const char* skip_plain(const char* p, const char* end) {
    static_assert(std::endian::native == std::endian::little, "the lowest flag is the first byte in memory");
    constexpr std::uint64_t kOnes = 0x0101010101010101ull;
    constexpr std::uint64_t kHighs = 0x8080808080808080ull;
    const auto has_zero_byte = [](std::uint64_t v) { return (v - kOnes) & ~v; };
    while (end - p >= 8) {
        std::uint64_t word;
        std::memcpy(&word, p, sizeof word);
        const std::uint64_t stops = (((word - kOnes * 0x20) & ~word) | word | has_zero_byte(word ^ (kOnes * '"')) |
                                     has_zero_byte(word ^ (kOnes * '\\'))) &
                                    kHighs;
        if (stops) return p + (std::countr_zero(stops) >> 3);
        p += sizeof word;
    }
    while (p < end && plain(*p))
        ++p;
    return p;
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
