#include "protocol/list_cursor.hpp"

#include <charconv>

namespace gatehouse::protocol {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url(const std::string& in) {
    std::string out;
    unsigned value = 0;
    int bits = 0;
    for (unsigned char c : in) {
        value = (value << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += kAlphabet[(value >> bits) & 0x3f];
        }
    }
    if (bits > 0) out += kAlphabet[(value << (6 - bits)) & 0x3f];
    return out;
}

std::optional<std::string> unbase64url(const std::string& in) {
    std::string out;
    unsigned value = 0;
    int bits = 0;
    for (char c : in) {
        const char* p = nullptr;
        for (const char* a = kAlphabet; *a; ++a)
            if (*a == c) p = a;
        if (!p) return std::nullopt;
        value = (value << 6) | static_cast<unsigned>(p - kAlphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((value >> bits) & 0xff);
        }
    }
    return out;
}

} // namespace

std::string encode_cursor(const std::string& fingerprint, std::size_t offset) {
    return base64url("c1:" + fingerprint + ":" + std::to_string(offset));
}

std::optional<std::size_t> decode_cursor(const std::string& cursor, const std::string& fingerprint) {
    if (cursor.empty() || cursor.size() > 128) return std::nullopt;
    auto text = unbase64url(cursor);
    if (!text) return std::nullopt;
    const std::string prefix = "c1:" + fingerprint + ":";
    if (text->compare(0, prefix.size(), prefix) != 0) return std::nullopt;
    std::size_t offset = 0;
    const char* begin = text->data() + prefix.size();
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(begin, end, offset);
    if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
    return offset;
}

} // namespace gatehouse::protocol
