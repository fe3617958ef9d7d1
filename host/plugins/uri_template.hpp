#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::plugins {

// A resource template (RFC 6570) as this host matches it: literal text,
// {name} (one path segment, percent-decoded) and {+name} (anything). The
// other operators, value lists and modifiers are refused at parse time, so a
// plugin learns at load that the host cannot match its template.
class UriTemplate {
public:
    // Throws std::invalid_argument with a sentence naming what is wrong and where.
    static UriTemplate parse(std::string_view text);

    // The variables when `uri` fits the template, by name. `safe_values`:
    // no value holds a control byte or a "." or ".." segment, and a {name}
    // holds no '/', '?' or '#' even percent-encoded (what a family that maps
    // a value to a file may rely on); without it, values are as sent, for a
    // server the URI is passed on to whole (an upstream's).
    std::optional<std::map<std::string, std::string>> match(std::string_view uri, bool safe_values = true) const;

    const std::string& text() const { return text_; }
    // The literal text before the first variable: every URI the template
    // matches begins with it.
    std::string literal_prefix() const;
    // Whether some URI could match both templates, judged by their literal
    // prefixes (one begins the other): a cautious answer, never a wrong no.
    bool may_overlap(const UriTemplate& other) const;
    const std::vector<std::string>& variables() const { return variables_; }

private:
    struct Part {
        bool is_variable = false;
        bool reserved = false; // {+name}: may hold '/', '?' and '#'
        std::string text;      // the literal, or the variable's name
    };

    std::string text_;
    std::vector<Part> parts_;
    std::vector<std::string> variables_;
};

} // namespace gatehouse::plugins
