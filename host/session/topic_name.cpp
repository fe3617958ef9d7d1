#include "session/topic_name.hpp"

#include <locale.h>
#include <wctype.h>

namespace gatehouse::session {

namespace {

// Decodes one UTF-8 code point at `i`; nullopt when malformed, overlong or a
// surrogate.
std::optional<char32_t> next_code_point(std::string_view s, std::size_t& i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    std::size_t length;
    char32_t cp;
    if (b0 < 0x80) {
        ++i;
        return b0;
    } else if ((b0 & 0xe0) == 0xc0) {
        length = 2, cp = b0 & 0x1f;
    } else if ((b0 & 0xf0) == 0xe0) {
        length = 3, cp = b0 & 0x0f;
    } else if ((b0 & 0xf8) == 0xf0) {
        length = 4, cp = b0 & 0x07;
    } else {
        return std::nullopt;
    }
    if (i + length > s.size()) return std::nullopt;
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xc0) != 0x80) return std::nullopt;
        cp = (cp << 6) | (byte(i + k) & 0x3f);
    }
    static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinimum[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::nullopt;
    i += length;
    return cp;
}

// The C.UTF-8 locale knows which code points are letters in every script;
// a private locale object leaves the process-wide locale alone.
bool is_letter(char32_t cp) {
    static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (!utf8) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return iswalpha_l(static_cast<wint_t>(cp), utf8) != 0;
}

} // namespace

std::optional<std::string> topic_problem(std::string_view topic) {
    static const std::string kRule =
        "A topic is one word of 1 to 64 characters: letters (any script), digits, '-' or '_'.";
    if (topic.empty()) return "The topic is empty. " + kRule;
    std::size_t i = 0, characters = 0;
    while (i < topic.size()) {
        auto cp = next_code_point(topic, i);
        if (!cp) return "The topic is not valid UTF-8. " + kRule;
        ++characters;
        const bool ok = (*cp >= '0' && *cp <= '9') || *cp == '-' || *cp == '_' || is_letter(*cp);
        if (!ok) return "The topic holds a character that is not allowed. " + kRule;
    }
    if (characters > 64) return "The topic is longer than 64 characters. " + kRule;
    // The topic names its conversation folder, and a file name holds at most
    // 255 bytes: 64 letters of four bytes each would not fit.
    if (topic.size() > 255) return "The topic takes more than 255 bytes in UTF-8. " + kRule;
    return std::nullopt;
}

} // namespace gatehouse::session
