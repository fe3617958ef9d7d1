#include "license/base64.hpp"

#include <array>
#include <cstdint>

namespace gatehouse::license {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> make_table() {
    std::array<std::int8_t, 256> t{};
    for (auto& v : t)
        v = -1;
    for (int i = 0; i < 64; ++i)
        t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
    return t;
}

constexpr auto kTable = make_table();

} // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16 |
                                static_cast<unsigned char>(bytes[i + 1]) << 8 |
                                static_cast<unsigned char>(bytes[i + 2]);
        out += kAlphabet[v >> 18 & 63];
        out += kAlphabet[v >> 12 & 63];
        out += kAlphabet[v >> 6 & 63];
        out += kAlphabet[v & 63];
    }
    if (const auto rest = bytes.size() - i; rest > 0) {
        std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
        if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
        out += kAlphabet[v >> 18 & 63];
        out += kAlphabet[v >> 12 & 63];
        out += rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    std::string symbols;
    symbols.reserve(text.size());
    for (char c : text)
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') symbols += c;
    if (symbols.size() % 4 != 0) return std::nullopt;
    std::size_t padding = 0;
    if (!symbols.empty() && symbols.back() == '=') ++padding;
    if (symbols.size() >= 2 && symbols[symbols.size() - 2] == '=') ++padding;
    std::string out;
    out.reserve(symbols.size() / 4 * 3);
    for (std::size_t i = 0; i < symbols.size(); i += 4) {
        std::uint32_t v = 0;
        for (std::size_t j = 0; j < 4; ++j) {
            const bool pad_slot = i + j >= symbols.size() - padding;
            const auto d = kTable[static_cast<unsigned char>(symbols[i + j])];
            if (pad_slot) {
                if (symbols[i + j] != '=') return std::nullopt;
                v <<= 6;
            } else {
                if (d < 0) return std::nullopt;
                v = v << 6 | static_cast<std::uint32_t>(d);
            }
        }
        out += static_cast<char>(v >> 16 & 0xff);
        if (i + 4 < symbols.size() || padding < 2) out += static_cast<char>(v >> 8 & 0xff);
        if (i + 4 < symbols.size() || padding < 1) out += static_cast<char>(v & 0xff);
    }
    // Bits under the padding must be zero, so that one byte string has one text.
    if (padding > 0) {
        const auto last = kTable[static_cast<unsigned char>(symbols[symbols.size() - padding - 1])];
        if ((padding == 1 && (last & 0x3)) || (padding == 2 && (last & 0xf))) return std::nullopt;
    }
    return out;
}

} // namespace gatehouse::license
