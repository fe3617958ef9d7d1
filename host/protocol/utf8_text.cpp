#include "protocol/utf8_text.hpp"

#include "protocol/json_bytes.hpp"

namespace gatehouse::protocol {

std::optional<std::size_t> first_non_utf8(std::string_view text) {
    const char* const begin = text.data();
    const char* const end = begin + text.size();
    for (const char* p = begin; p < end;) {
        if (json_bytes::byte(*p) < 0x80) {
            ++p;
            continue;
        }
        const std::size_t n = json_bytes::utf8_sequence(p, end);
        if (n == 0) return static_cast<std::size_t>(p - begin);
        p += n;
    }
    return std::nullopt;
}

std::string_view utf8_prefix(std::string_view text, std::size_t limit) {
    if (text.size() <= limit) return text;
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        --end;
    return text.substr(0, end);
}

std::string cut_utf8(std::string_view text, std::size_t limit, std::string_view suffix) {
    if (text.size() <= limit) return std::string(text);
    std::string cut(utf8_prefix(text, limit));
    cut += "…";
    cut += suffix;
    return cut;
}

std::string quoted_text(std::string_view text, std::size_t limit) {
    std::string quoted = cut_utf8(text, limit);
    for (char& c : quoted)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    return quoted;
}

} // namespace gatehouse::protocol
