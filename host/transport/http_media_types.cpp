#include "transport/http_media_types.hpp"

#include "protocol/ascii_case.hpp"

#include <algorithm>

namespace gatehouse::transport {

namespace {

using protocol::equals_ignoring_ascii_case;

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

// A weight of zero ("q=0", "q=0.000") means "not acceptable"; anything else,
// or no weight, accepts.
bool weight_refuses(std::string_view parameters) {
    while (!parameters.empty()) {
        const auto semicolon = parameters.find(';');
        const std::string_view parameter = trim(parameters.substr(0, semicolon));
        parameters = semicolon == std::string_view::npos ? std::string_view() : parameters.substr(semicolon + 1);
        const auto equals = parameter.find('=');
        if (equals == std::string_view::npos || !equals_ignoring_ascii_case(trim(parameter.substr(0, equals)), "q"))
            continue;
        const std::string_view weight = trim(parameter.substr(equals + 1));
        return !weight.empty() &&
               std::all_of(weight.begin(), weight.end(), [](char c) { return c == '0' || c == '.'; });
    }
    return false;
}

} // namespace

bool is_json_media_type(std::string_view content_type) {
    const std::string_view type = trim(content_type.substr(0, content_type.find(';')));
    return equals_ignoring_ascii_case(type, "application/json");
}

AcceptedAnswers accepted_answers(std::optional<std::string_view> accept) {
    if (!accept) return {true, true};
    // What the SDKs send, answered without reading it range by range.
    if (*accept == std::string_view("application/json, text/event-stream")) return {true, true};
    // The most specific range that names a type decides for it (RFC 9110
    // §12.5.1): "text/*, text/event-stream;q=0" refuses the stream.
    struct Verdict {
        int specificity = 0; // 0 unnamed, 1 */*, 2 type/*, 3 the type itself
        bool accepted = false;
        void consider(int s, bool a) {
            if (s > specificity) specificity = s, accepted = a;
        }
    } json, event_stream;
    std::string_view rest = *accept;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view range = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const auto semicolon = range.find(';');
        const std::string_view type = trim(range.substr(0, semicolon));
        if (type.empty()) continue;
        const bool accepts = semicolon == std::string_view::npos || !weight_refuses(range.substr(semicolon + 1));
        if (equals_ignoring_ascii_case(type, "*/*")) {
            json.consider(1, accepts);
            event_stream.consider(1, accepts);
        } else if (equals_ignoring_ascii_case(type, "application/*")) {
            json.consider(2, accepts);
        } else if (equals_ignoring_ascii_case(type, "text/*")) {
            event_stream.consider(2, accepts);
        } else if (equals_ignoring_ascii_case(type, "application/json")) {
            json.consider(3, accepts);
        } else if (equals_ignoring_ascii_case(type, "text/event-stream")) {
            event_stream.consider(3, accepts);
        }
    }
    return {json.accepted, event_stream.accepted};
}

} // namespace gatehouse::transport
