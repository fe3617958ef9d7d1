#include "protocol/json_reader.hpp"

#include "protocol/json_bytes.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace gatehouse::protocol {

namespace {

using namespace json_bytes;

constexpr char kExpectedValue[] = "expected a value ('{', '[', a string, a number, true, false or null), found ";

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

void append_utf8(std::string& out, std::uint32_t code_point) {
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xC0 | (code_point >> 6));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xE0 | (code_point >> 12));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code_point >> 18));
        out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
}

// The containers a parse has open, innermost last. The first levels live in
// the stack itself, which covers any usual message without an allocation;
// deeper ones (up to the parse's bound) spill to the heap.
class OpenContainers {
public:
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Json* back() const { return size_ <= kInline ? inline_[size_ - 1] : deeper_.back(); }
    void push_back(Json* container) {
        if (size_ < kInline)
            inline_[size_] = container;
        else
            deeper_.push_back(container);
        ++size_;
    }
    void pop_back() {
        if (size_ > kInline) deeper_.pop_back();
        --size_;
    }

private:
    static constexpr std::size_t kInline = 16;
    Json* inline_[kInline];
    std::vector<Json*> deeper_;
    std::size_t size_ = 0;
};

class Reader {
public:
    Reader(std::string_view text, std::size_t max_depth)
        : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

    BoundedParse::Outcome read(Json& out) {
        if (end_ - p_ >= 3 && byte(p_[0]) == 0xEF && byte(p_[1]) == 0xBB && byte(p_[2]) == 0xBF) p_ += 3;
        // The arrays and objects not closed yet, innermost last. A pointer
        // stays good while its container is open: only the innermost one
        // grows, and object members do not move.
        OpenContainers open;
        Json* slot = &out; // where the next value goes
        for (;;) {
            skip_space();
            if (p_ == end_) return fail("expected a value, found the end of the text");
            switch (*p_) {
            case '{':
                if (open.size() >= max_depth_) return BoundedParse::Outcome::too_deep;
                ++p_;
                *slot = Json::object();
                skip_space();
                if (p_ < end_ && *p_ == '}') {
                    ++p_;
                    break;
                }
                open.push_back(slot);
                slot = member_of(*slot);
                if (!slot) return BoundedParse::Outcome::not_json;
                continue;
            case '[':
                if (open.size() >= max_depth_) return BoundedParse::Outcome::too_deep;
                ++p_;
                *slot = Json::array();
                skip_space();
                if (p_ < end_ && *p_ == ']') {
                    ++p_;
                    break;
                }
                open.push_back(slot);
                slot = &slot->get_ref<Json::array_t&>().emplace_back();
                continue;
            case '"': {
                std::string text;
                if (!read_string(text)) return BoundedParse::Outcome::not_json;
                *slot = std::move(text);
                break;
            }
            case 't':
                if (!literal("true")) return BoundedParse::Outcome::not_json;
                *slot = true;
                break;
            case 'f':
                if (!literal("false")) return BoundedParse::Outcome::not_json;
                *slot = false;
                break;
            case 'n':
                if (!literal("null")) return BoundedParse::Outcome::not_json;
                *slot = nullptr;
                break;
            default:
                if (*p_ != '-' && !is_digit(*p_)) return fail(kExpectedValue + found());
                if (!read_number(*slot)) return BoundedParse::Outcome::not_json;
            }
            // A value is complete: close what it completes, then find the next slot.
            for (;;) {
                skip_space();
                if (open.empty()) {
                    if (p_ != end_) return fail("expected the end of the text after the value, found " + found());
                    return BoundedParse::Outcome::parsed;
                }
                Json& container = *open.back();
                const bool object = container.is_object();
                const char close = object ? '}' : ']';
                if (p_ < end_ && *p_ == close) {
                    ++p_;
                    open.pop_back();
                    continue;
                }
                if (p_ == end_ || *p_ != ',')
                    return fail(std::string("expected ',' or '") + close + "' after " +
                                (object ? "an object member" : "an array item") + ", found " + found());
                ++p_;
                if (object) {
                    skip_space();
                    slot = member_of(container);
                    if (!slot) return BoundedParse::Outcome::not_json;
                } else {
                    slot = &container.get_ref<Json::array_t&>().emplace_back();
                }
                break;
            }
        }
    }

    std::string& error() { return error_; }
    bool names_repeated() const { return names_repeated_; }
    bool numbers_rounded() const { return numbers_rounded_; }

private:
    void skip_space() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t'))
            ++p_;
    }

    // The member's name and the colon after it; the slot its value goes in.
    Json* member_of(Json& object) {
        if (p_ == end_ || *p_ != '"') {
            fail("expected a member name in double quotes, found " + found());
            return nullptr;
        }
        std::string name;
        if (!read_string(name)) return nullptr;
        skip_space();
        if (p_ == end_ || *p_ != ':') {
            fail("expected ':' after a member name, found " + found());
            return nullptr;
        }
        ++p_;
        // A repeated name: the last value wins, as in nlohmann's parser (the
        // slot found is overwritten). Names often come in order (nlohmann
        // writes them so), and a hint at the end then saves the search.
        auto& members = object.get_ref<Json::object_t&>();
        const std::size_t before = members.size();
        Json* slot = &members.emplace_hint(members.end(), std::move(name), nullptr)->second;
        if (members.size() == before) names_repeated_ = true;
        return slot;
    }

    bool read_string(std::string& out) {
        ++p_; // the opening quote
        const char* run = p_;
        for (;;) {
            p_ = skip_plain(p_, end_);
            if (p_ == end_) return fail_bool("the text ends inside a string");
            const unsigned c = byte(*p_);
            if (c == '"') {
                append_bytes(out, run, p_);
                ++p_;
                return true;
            }
            if (c == '\\') {
                append_bytes(out, run, p_);
                if (!read_escape(out)) return false;
                run = p_;
                continue;
            }
            if (c < 0x20) return fail_bool("a control character inside a string must be escaped (\\n, \\u00XX)");
            const std::size_t length = utf8_sequence(p_, end_);
            if (length == 0) return fail_bool("a string holds bytes that are not UTF-8");
            p_ += length;
        }
    }

    bool read_escape(std::string& out) {
        ++p_; // the backslash
        if (p_ == end_) return fail_bool("the text ends inside a string");
        switch (*p_) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
            std::uint32_t code_point = 0;
            if (!hex4(code_point)) return false;
            if (code_point >= 0xDC00 && code_point <= 0xDFFF)
                return fail_bool("a \\u escape holds a low surrogate with no high surrogate before it");
            if (code_point >= 0xD800 && code_point <= 0xDBFF) {
                std::uint32_t low = 0;
                if (end_ - p_ < 3 || p_[1] != '\\' || p_[2] != 'u')
                    return fail_bool("a high surrogate (\\uD800 to \\uDBFF) must be followed by a \\u escape of a low "
                                     "one (\\uDC00 to \\uDFFF)");
                p_ += 2;
                if (!hex4(low)) return false;
                if (low < 0xDC00 || low > 0xDFFF)
                    return fail_bool("a high surrogate (\\uD800 to \\uDBFF) must be followed by a low one (\\uDC00 "
                                     "to \\uDFFF)");
                code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
            }
            append_utf8(out, code_point);
            break;
        }
        default: return fail_bool("a string holds an unknown escape: a backslash, then " + found());
        }
        ++p_;
        return true;
    }

    // The four hex digits after the 'u' at p_; p_ ends on the last of them.
    bool hex4(std::uint32_t& value) {
        for (int i = 0; i < 4; ++i) {
            ++p_;
            if (p_ == end_) return fail_bool("the text ends inside a \\u escape");
            const char c = *p_;
            unsigned digit;
            if (c >= '0' && c <= '9')
                digit = static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f')
                digit = static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                digit = static_cast<unsigned>(c - 'A' + 10);
            else
                return fail_bool("a \\u escape needs four hex digits, found " + found());
            value = value * 16 + digit;
        }
        return true;
    }

    bool literal(std::string_view word) {
        if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
            return fail_bool(kExpectedValue + found());
        p_ += word.size();
        return true;
    }

    // RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    bool read_number(Json& slot) {
        const char* start = p_;
        const bool negative = *p_ == '-';
        if (negative) ++p_;
        if (p_ == end_ || !is_digit(*p_)) return fail_bool("expected a digit after '-', found " + found());
        if (*p_ == '0')
            ++p_;
        else
            while (p_ < end_ && is_digit(*p_))
                ++p_;
        bool integral = true;
        if (p_ < end_ && *p_ == '.') {
            integral = false;
            ++p_;
            if (p_ == end_ || !is_digit(*p_))
                return fail_bool("expected a digit after the decimal point, found " + found());
            while (p_ < end_ && is_digit(*p_))
                ++p_;
        }
        const char* const mantissa_end = p_;
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            integral = false;
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (p_ == end_ || !is_digit(*p_)) return fail_bool("expected a digit in the exponent, found " + found());
            while (p_ < end_ && is_digit(*p_))
                ++p_;
        }
        if (integral) {
            // Past 64 bits an integer is kept as floating point, as nlohmann does.
            if (negative) {
                std::int64_t value = 0;
                if (std::from_chars(start, p_, value).ec == std::errc()) {
                    slot = value;
                    return true;
                }
            } else {
                std::uint64_t value = 0;
                if (std::from_chars(start, p_, value).ec == std::errc()) {
                    slot = value;
                    return true;
                }
            }
        }
        // An integer past 64 bits, or more digits than a double keeps: the
        // tree holds a rounded number where the text writes an exact one.
        if (integral || significant_digits(start, mantissa_end) > 17) numbers_rounded_ = true;
        double value = 0;
        const auto [end, problem] = std::from_chars(start, p_, value);
        if (problem == std::errc::result_out_of_range) {
            numbers_rounded_ = true;
            // Too small rounds to zero, as strtod has it; too large is refused.
            value = std::strtod(std::string(start, p_).c_str(), nullptr);
        } else if (problem != std::errc() || end != p_) {
            return fail_bool("the number " + std::string(start, p_) + " cannot be read");
        }
        if (!std::isfinite(value))
            return fail_bool("the number " + std::string(start, p_).substr(0, 40) + " is too large for a double");
        slot = value;
        return true;
    }

    // The digits of a number's mantissa after its leading zeros.
    static std::size_t significant_digits(const char* from, const char* to) {
        std::size_t digits = 0;
        for (const char* q = from; q < to; ++q)
            if (is_digit(*q) && (digits > 0 || *q != '0')) ++digits;
        return digits;
    }

    // What stands at p_, for an error: a character, a byte, or the end.
    std::string found() const {
        if (p_ == end_) return "the end of the text";
        const unsigned c = byte(*p_);
        if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
        static constexpr char kHex[] = "0123456789ABCDEF";
        return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xF];
    }

    BoundedParse::Outcome fail(const std::string& what) {
        std::size_t line = 1;
        const char* line_start = begin_;
        for (const char* q = begin_; q < p_; ++q)
            if (*q == '\n') {
                ++line;
                line_start = q + 1;
            }
        error_ = "at line " + std::to_string(line) + ", column " + std::to_string(p_ - line_start + 1) + ": " + what;
        return BoundedParse::Outcome::not_json;
    }
    bool fail_bool(const std::string& what) {
        fail(what);
        return false;
    }

    const char* const begin_;
    const char* p_;
    const char* const end_;
    const std::size_t max_depth_;
    std::string error_;
    bool names_repeated_ = false;
    bool numbers_rounded_ = false;
};

} // namespace

BoundedParse parse_bounded(std::string_view text, std::size_t max_depth) {
    BoundedParse out;
    Reader reader(text, max_depth);
    out.outcome = reader.read(out.value);
    out.names_repeated = reader.names_repeated();
    out.numbers_rounded = reader.numbers_rounded();
    if (out.outcome != BoundedParse::Outcome::parsed) {
        out.value = nullptr; // what was built before the stop is no message
        out.error = std::move(reader.error());
    }
    return out;
}

} // namespace gatehouse::protocol
