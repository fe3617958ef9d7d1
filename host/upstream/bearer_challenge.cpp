#include "upstream/bearer_challenge.hpp"

#include "protocol/ascii_case.hpp"

#include <cctype>
#include <optional>

namespace gatehouse::upstream {

namespace {

bool token_char(char c) {
    // RFC 9110 tchar, and '/' of token68 values (a bare base64 credential).
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~/").find(c) != std::string_view::npos;
}

using protocol::equals_ignoring_ascii_case;

// Reads the header left to right: schemes, their name=value parameters.
class Reader {
public:
    explicit Reader(std::string_view text) : text_(text) {}

    // True when a comma was among what it skipped.
    bool skip_space_and_commas() {
        bool comma = false;
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == ','))
            comma |= text_[at_++] == ',';
        return comma;
    }
    void skip_space() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t'))
            ++at_;
    }
    bool done() const { return at_ >= text_.size(); }
    std::string_view token() {
        const std::size_t start = at_;
        while (at_ < text_.size() && token_char(text_[at_]))
            ++at_;
        return text_.substr(start, at_ - start);
    }
    // After a token: '=' and a value make it a parameter.
    bool equals_follows() {
        const std::size_t mark = at_;
        skip_space();
        if (at_ < text_.size() && text_[at_] == '=') {
            // A token68 ends in '=' padding: "abc==" then a comma or the end.
            std::size_t after = at_;
            while (after < text_.size() && text_[after] == '=')
                ++after;
            std::size_t next = after;
            while (next < text_.size() && (text_[next] == ' ' || text_[next] == '\t'))
                ++next;
            if (after - at_ > 1 || next >= text_.size() || text_[next] == ',') {
                at_ = after;
                return false;
            }
            ++at_;
            return true;
        }
        at_ = mark;
        return false;
    }
    // A token or a quoted string; nullopt when it does not parse.
    std::optional<std::string> value() {
        skip_space();
        if (at_ < text_.size() && text_[at_] == '"') {
            ++at_;
            std::string out;
            while (at_ < text_.size() && text_[at_] != '"') {
                if (text_[at_] == '\\' && at_ + 1 < text_.size()) ++at_;
                out += text_[at_++];
            }
            if (at_ >= text_.size()) return std::nullopt; // unclosed
            ++at_;
            return out;
        }
        const auto bare = token();
        // Ended by anything but a space, a comma or the end (an unquoted
        // URL's ':'), it is not the value it seems: none.
        if (bare.empty() || (at_ < text_.size() && text_[at_] != ' ' && text_[at_] != '\t' && text_[at_] != ','))
            return std::nullopt;
        return std::string(bare);
    }

private:
    std::string_view text_;
    std::size_t at_ = 0;
};

} // namespace

BearerChallenge BearerChallenge::parse(std::string_view header) {
    BearerChallenge out;
    Reader r(header);
    bool in_bearer = false;
    bool after_scheme = false; // a scheme's name was the last thing read
    for (;;) {
        const bool comma = r.skip_space_and_commas();
        if (r.done()) break;
        const auto name = r.token();
        if (name.empty()) break; // what follows does not parse
        if (!r.equals_follows()) {
            // Right after a scheme's name, a bare word is its token68; else a scheme starts.
            if (after_scheme && !comma) {
                after_scheme = false;
                continue;
            }
            in_bearer = equals_ignoring_ascii_case(name, "Bearer");
            after_scheme = true;
            continue;
        }
        after_scheme = false;
        const auto value = r.value();
        if (!value) break;
        if (!in_bearer || value->size() > kMaxValue) continue;
        if (equals_ignoring_ascii_case(name, "error"))
            out.error = *value;
        else if (equals_ignoring_ascii_case(name, "scope"))
            out.scope = *value;
        else if (equals_ignoring_ascii_case(name, "resource_metadata"))
            out.resource_metadata = *value;
    }
    return out;
}

} // namespace gatehouse::upstream
