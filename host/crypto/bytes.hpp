#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gatehouse::crypto {

// Lower-case hex of `bytes`, two characters a byte.
inline std::string hex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out += kDigits[b >> 4];
        out += kDigits[b & 15];
    }
    return out;
}

// Equal contents, compared in time that depends on the length only, so the
// time a comparison takes tells nothing about where two secrets differ.
inline bool equal_in_constant_time(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    volatile unsigned char difference = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        difference = difference | static_cast<unsigned char>(a[i] ^ b[i]);
    return difference == 0;
}

} // namespace gatehouse::crypto
