#include "protocol/json_writer.hpp"

#include "protocol/json_bytes.hpp"

#include <charconv>

namespace gatehouse::protocol {

namespace {

using namespace json_bytes;

using Json = nlohmann::json;

// False, with nothing appended, when `text` holds bytes that are not UTF-8.
bool append_string(std::string& out, std::string_view text) {
    const char* p = text.data();
    const char* const end = p + text.size();
    const std::size_t start = out.size();
    out.push_back('"');
    const char* run = p;
    while (p < end) {
        p = skip_plain(p, end);
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
        append_bytes(out, run, p);
        const char* escape = nullptr;
        switch (c) {
        case '"': escape = "\\\""; break;
        case '\\': escape = "\\\\"; break;
        case '\b': escape = "\\b"; break;
        case '\t': escape = "\\t"; break;
        case '\n': escape = "\\n"; break;
        case '\f': escape = "\\f"; break;
        case '\r': escape = "\\r"; break;
        }
        if (escape) {
            out.append(escape, 2);
        } else {
            static constexpr char kHex[] = "0123456789abcdef";
            const char unicode[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
            out.append(unicode, sizeof unicode);
        }
        run = ++p;
    }
    append_bytes(out, run, p);
    out.push_back('"');
    return true;
}

// A string that is not UTF-8 is rare enough to leave to nlohmann, whose
// replacement of each bad sequence is the behaviour kept.
void append_string_replacing(std::string& out, std::string_view text) {
    if (!append_string(out, text)) out += Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The binary subtype that marks a value as JSON text written already ("wj").
constexpr std::uint64_t kWrittenJson = 0x776a;

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
        out.push_back('{');
        bool first = true;
        for (const auto& [name, member] : members) {
            if (!first) out.push_back(',');
            first = false;
            append_string_replacing(out, name);
            out.push_back(':');
            append_json(out, member);
        }
        out.push_back('}');
        return;
    }
    case Json::value_t::array: {
        out.push_back('[');
        bool first = true;
        for (const auto& item : value.get_ref<const Json::array_t&>()) {
            if (!first) out.push_back(',');
            first = false;
            append_json(out, item);
        }
        out.push_back(']');
        return;
    }
    case Json::value_t::string: append_string_replacing(out, value.get_ref<const std::string&>()); return;
    case Json::value_t::boolean:
        if (value.get<bool>())
            out.append("true", 4);
        else
            out.append("false", 5);
        return;
    case Json::value_t::null: out.append("null", 4); return;
    case Json::value_t::number_integer: append_number(out, value.get<Json::number_integer_t>()); return;
    case Json::value_t::number_unsigned: append_number(out, value.get<Json::number_unsigned_t>()); return;
    case Json::value_t::binary: {
        const auto& bytes = value.get_binary();
        if (bytes.has_subtype() && bytes.subtype() == kWrittenJson) {
            out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
            return;
        }
        break;
    }
    // Floating point (shortest round trip, ".0" on whole numbers, null for
    // what is not finite), other binary values and discarded values:
    // nlohmann's own words.
    default: break;
    }
    out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json written_json(std::string_view text) {
    return Json::binary(std::vector<std::uint8_t>(text.begin(), text.end()), kWrittenJson);
}

std::optional<std::string_view> written_text(const Json& value) {
    if (!value.is_binary()) return std::nullopt;
    const auto& bytes = value.get_binary();
    if (!bytes.has_subtype() || bytes.subtype() != kWrittenJson) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void append_json_string(std::string& out, std::string_view text) {
    append_string_replacing(out, text);
}

} // namespace gatehouse::protocol
