#include "plugins/uri_template.hpp"

#include "protocol/utf8_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <stdexcept>

namespace gatehouse::plugins {

namespace {

constexpr std::size_t kMaxTemplateLength = 2048;
constexpr std::size_t kMaxUriLength = 8192;
constexpr std::size_t kMaxVariables = 32;

bool varchar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<std::string> percent_decode(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size()) return std::nullopt;
        const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    // A decoded value travels on as a JSON string.
    if (protocol::first_non_utf8(out)) return std::nullopt;
    return out;
}

// What a plugin may take a decoded value for: {name} is one path segment
// ('/', '?' and '#' encoded as %2F, %3F, %23 included), and no value holds a
// control byte (a NUL that cuts a C string short, a newline) or climbs a
// path with a "." or ".." segment, so a plugin that maps a value to a file
// is not walked out of its folder.
bool safe_value(std::string_view value, bool reserved) {
    for (const char c : value) {
        const auto b = static_cast<unsigned char>(c);
        if (b < 0x20 || b == 0x7f) return false;
        if (!reserved && (c == '/' || c == '?' || c == '#')) return false;
    }
    for (std::size_t start = 0;;) {
        const std::size_t slash = value.find('/', start);
        const std::string_view segment = value.substr(start, slash - start);
        if (segment == "." || segment == "..") return false;
        if (slash == std::string_view::npos) return true;
        start = slash + 1;
    }
}

std::string at(std::size_t offset) {
    return " (at character " + std::to_string(offset + 1) + ")";
}

} // namespace

UriTemplate UriTemplate::parse(std::string_view text) {
    if (text.empty()) throw std::invalid_argument("the URI template is empty");
    if (text.size() > kMaxTemplateLength)
        throw std::invalid_argument("the URI template is longer than " + std::to_string(kMaxTemplateLength) +
                                    " characters");
    UriTemplate t;
    t.text_ = std::string(text);
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '}')
            throw std::invalid_argument(
                std::string(c == '}' ? "a '}' without its '{'" : "a space or control character") + at(i));
        if (c != '{') {
            if (t.parts_.empty() || t.parts_.back().is_variable) t.parts_.push_back({});
            t.parts_.back().text += c;
            ++i;
            continue;
        }
        const std::size_t close = text.find('}', i);
        if (close == std::string_view::npos) throw std::invalid_argument("a '{' that is never closed" + at(i));
        std::string_view body = text.substr(i + 1, close - i - 1);
        Part part;
        part.is_variable = true;
        if (!body.empty() && body.front() == '+') {
            part.reserved = true;
            body.remove_prefix(1);
        } else if (!body.empty() && std::string_view("#./;?&=,!@|").find(body.front()) != std::string_view::npos) {
            throw std::invalid_argument(std::string("the expression {") +
                                        std::string(text.substr(i + 1, close - i - 1)) + "} uses the operator '" +
                                        body.front() + "'" + at(i) +
                                        ", which this host does not match (it matches {name} and {+name})");
        }
        if (body.empty()) throw std::invalid_argument("an expression without a variable name" + at(i));
        for (char v : body)
            if (!varchar(v))
                throw std::invalid_argument("the expression {" + std::string(text.substr(i + 1, close - i - 1)) + "}" +
                                            at(i) +
                                            " is not a single variable name (letters, digits, '_'; no lists or "
                                            "modifiers)");
        if (!t.parts_.empty() && t.parts_.back().is_variable)
            throw std::invalid_argument("two expressions follow each other" + at(i) +
                                        "; put literal text between them so a URI splits one way only");
        part.text = std::string(body);
        if (std::find(t.variables_.begin(), t.variables_.end(), part.text) != t.variables_.end())
            throw std::invalid_argument("the variable '" + part.text + "' appears twice");
        t.variables_.push_back(part.text);
        t.parts_.push_back(std::move(part));
        i = close + 1;
    }
    if (t.variables_.size() > kMaxVariables)
        throw std::invalid_argument("the URI template has more than " + std::to_string(kMaxVariables) + " variables");
    if (t.variables_.empty())
        throw std::invalid_argument("the URI template has no {variable}; declare a fixed URI as a resource instead");
    return t;
}

std::string UriTemplate::literal_prefix() const {
    std::string prefix;
    for (const auto& part : parts_) {
        if (part.is_variable) break;
        prefix += part.text;
    }
    return prefix;
}

bool UriTemplate::may_overlap(const UriTemplate& other) const {
    const std::string mine = literal_prefix(), theirs = other.literal_prefix();
    return mine.starts_with(theirs) || theirs.starts_with(mine);
}

std::optional<std::map<std::string, std::string>> UriTemplate::match(std::string_view uri, bool safe_values) const {
    if (uri.size() > kMaxUriLength) return std::nullopt;
    // fits[p][k]: whether parts p.. can consume uri from offset k. Filled from
    // the end in O(parts * n), so no URI, however its literals repeat, makes
    // matching slow.
    const std::size_t n = uri.size();
    const std::size_t parts = parts_.size();
    std::vector<std::size_t> segment_end(n + 1, n); // first '/', '?' or '#' at or after k
    for (std::size_t k = n; k-- > 0;)
        segment_end[k] = (uri[k] == '/' || uri[k] == '?' || uri[k] == '#') ? k : segment_end[k + 1];
    std::vector<std::vector<char>> fits(parts + 1, std::vector<char>(n + 1, 0));
    fits[parts][n] = 1;
    std::vector<std::size_t> next_fit(n + 2, n + 1); // smallest e >= k with fits[p + 1][e]
    for (std::size_t p = parts; p-- > 0;) {
        const Part& part = parts_[p];
        next_fit[n + 1] = n + 1;
        for (std::size_t e = n + 1; e-- > 0;)
            next_fit[e] = fits[p + 1][e] ? e : next_fit[e + 1];
        for (std::size_t k = 0; k <= n; ++k) {
            if (!part.is_variable) {
                const auto& lit = part.text;
                fits[p][k] = k + lit.size() <= n && uri.compare(k, lit.size(), lit) == 0 && fits[p + 1][k + lit.size()];
            } else {
                // A value has at least one character; {name} stays inside one segment.
                const std::size_t last = part.reserved ? n : (k < n ? segment_end[k] : n);
                fits[p][k] = k < n && next_fit[k + 1] <= last;
            }
        }
    }
    if (!fits[0][0]) return std::nullopt;
    // Walk the table forwards, taking the shortest value that still fits.
    std::map<std::string, std::string> values;
    std::size_t k = 0;
    for (std::size_t p = 0; p < parts; ++p) {
        const Part& part = parts_[p];
        if (!part.is_variable) {
            k += part.text.size();
            continue;
        }
        std::size_t e = k + 1;
        while (!fits[p + 1][e])
            ++e;
        auto decoded = percent_decode(uri.substr(k, e - k));
        if (!decoded || (safe_values && !safe_value(*decoded, part.reserved))) return std::nullopt;
        values.emplace(part.text, std::move(*decoded));
        k = e;
    }
    return values;
}

} // namespace gatehouse::plugins
