#include "protocol/json_writer.hpp"

#include "protocol/json_bytes.hpp"

#include <charconv>

namespace gatehouse::protocol {

namespace {

using namespace json_bytes;

using Json = nlohmann::json;

// False, with nothing appended, when `text` holds bytes that are not UTF-8.
bool append_string(std::string& out, const std::string& text) {
    const char* p = text.data();
    const char* const end = p + text.size();
    const std::size_t start = out.size();
    out += '"';
    const char* run = p;
    while (p < end) {
        while (p < end && plain(*p))
            ++p;
        if (p == end) break;
        const unsigned c = byte(*p);
        if (c >= 0x80) {
            const std::size_t length = utf8_sequence(p, end);
            if (length == 0) {
                out.resize(start);
                return false;
            }
            p += length;
            continue;
        }
        out.append(run, p);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\f': out += "\\f"; break;
        case '\r': out += "\\r"; break;
        default: {
            static constexpr char kHex[] = "0123456789abcdef";
            const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
            out.append(escape, sizeof escape);
        }
        }
        run = ++p;
    }
    out.append(run, p);
    out += '"';
    return true;
}

// A string that is not UTF-8 is rare enough to leave to nlohmann, whose
// replacement of each bad sequence is the behaviour kept.
void append_string_replacing(std::string& out, const std::string& text) {
    if (!append_string(out, text)) out += Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class Number> void append_number(std::string& out, Number n) {
    char digits[24];
    const auto written = std::to_chars(digits, digits + sizeof digits, n);
    out.append(digits, written.ptr);
}

} // namespace

void append_json(std::string& out, const Json& value) {
    switch (value.type()) {
    case Json::value_t::object: {
        const auto& members = value.get_ref<const Json::object_t&>();
        out += '{';
        bool first = true;
        for (const auto& [name, member] : members) {
            if (!first) out += ',';
            first = false;
            append_string_replacing(out, name);
            out += ':';
            append_json(out, member);
        }
        out += '}';
        return;
    }
    case Json::value_t::array: {
        out += '[';
        bool first = true;
        for (const auto& item : value.get_ref<const Json::array_t&>()) {
            if (!first) out += ',';
            first = false;
            append_json(out, item);
        }
        out += ']';
        return;
    }
    case Json::value_t::string: append_string_replacing(out, value.get_ref<const std::string&>()); return;
    case Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case Json::value_t::null: out += "null"; return;
    case Json::value_t::number_integer: append_number(out, value.get<Json::number_integer_t>()); return;
    case Json::value_t::number_unsigned: append_number(out, value.get<Json::number_unsigned_t>()); return;
    // Floating point (shortest round trip, ".0" on whole numbers, null for
    // what is not finite), binary and discarded values: nlohmann's own words.
    default: out += value.dump(-1, ' ', false, Json::error_handler_t::replace); return;
    }
}

} // namespace gatehouse::protocol
