#include "transport/mcp_http_headers.hpp"

#include "license/base64.hpp"
#include "protocol/revision.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace gatehouse::transport {

// Keys looked up by length, not measured with strlen at every member compared.
using namespace std::string_view_literals;

using protocol::Json;

namespace {

constexpr std::string_view kBase64Prefix = "=?base64?";
constexpr std::string_view kBase64Suffix = "?=";

// RFC 9110 field values: visible ASCII, space and tab.
bool plain_header_text(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](unsigned char c) { return c == '\t' || (c >= 0x20 && c <= 0x7e); });
}

// The host's strict decoder (alphabet, padding, length), except that a
// header value may not wrap: whitespace the decoder would skip is refused.
std::optional<std::string> base64_decode(std::string_view text) {
    if (text.find_first_of(" \t\r\n") != std::string_view::npos) return std::nullopt;
    return license::base64_decode(text);
}

// A number as JSON writes one: -?digits(.digits)?([eE][+-]?digits)?
bool plain_decimal(std::string_view text) {
    std::size_t i = 0;
    const auto digits = [&] {
        const std::size_t start = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9')
            ++i;
        return i > start;
    };
    if (i < text.size() && text[i] == '-') ++i;
    const std::size_t integer = i;
    if (!digits()) return false;
    if (text[integer] == '0' && i - integer > 1) return false; // JSON writes no leading zero
    if (i < text.size() && text[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == text.size();
}

// Whether a decoded header carries the argument: strings as they are,
// integers in decimal, booleans as true/false.
bool header_matches(const std::string& header, const Json& value) {
    if (value.is_string()) return header == value.get_ref<const std::string&>();
    if (value.is_boolean()) return header == (value.get<bool>() ? "true" : "false");
    if (value.is_number()) {
        if (!plain_decimal(header)) return false; // no hex, '+', spaces, inf or nan strtod would take
        // An integer against an integer's digits: exactly, past what a double holds.
        if (value.is_number_integer() && header.find_first_of(".eE") == std::string::npos) {
            const char* first = header.data();
            const char* last = first + header.size();
            if (value.is_number_unsigned()) {
                std::uint64_t parsed = 0;
                const auto [end, error] = std::from_chars(first, last, parsed);
                return error == std::errc() && end == last && parsed == value.get<std::uint64_t>();
            }
            std::int64_t parsed = 0;
            const auto [end, error] = std::from_chars(first, last, parsed);
            return error == std::errc() && end == last && parsed == value.get<std::int64_t>();
        }
        // Otherwise compared as numbers, so "42.0" matches 42 as the spec
        // suggests; only where a double holds the argument exactly.
        constexpr double kExact = 9007199254740992.0; // 2^53
        const double wanted = value.get<double>();
        if (value.is_number_integer() && std::fabs(wanted) >= kExact) return false;
        char* end = nullptr;
        const double parsed = std::strtod(header.c_str(), &end);
        if (end != header.c_str() + header.size() || !std::isfinite(parsed)) return false;
        return parsed == wanted;
    }
    return false;
}

const Json* value_at(const Json& arguments, const std::vector<std::string>& path) {
    const Json* node = &arguments;
    for (const auto& step : path) {
        if (!node->is_object()) return nullptr;
        auto it = node->find(step);
        if (it == node->end()) return nullptr;
        node = &*it;
    }
    return node;
}

} // namespace

std::optional<std::string> decode_mcp_header_value(std::string_view raw) {
    if (raw.size() >= kBase64Prefix.size() + kBase64Suffix.size() &&
        raw.substr(0, kBase64Prefix.size()) == kBase64Prefix &&
        raw.substr(raw.size() - kBase64Suffix.size()) == kBase64Suffix)
        return base64_decode(
            raw.substr(kBase64Prefix.size(), raw.size() - kBase64Prefix.size() - kBase64Suffix.size()));
    if (!plain_header_text(raw)) return std::nullopt;
    return std::string(raw);
}

std::optional<std::string> check_request_headers(const HeaderLookup& headers, const Json& message,
                                                 const std::vector<ParamHeader>& param_headers) {
    static const Json empty = Json::object();
    const auto params_it = message.find("params"sv);
    const Json& params = params_it != message.end() && params_it->is_object() ? *params_it : empty;
    const auto method = message.find("method"sv);
    return check_request_headers(headers,
                                 method != message.end() && method->is_string()
                                     ? std::string_view(method->get_ref<const std::string&>())
                                     : std::string_view(),
                                 params, nullptr, param_headers);
}

std::optional<std::string> check_request_headers(const HeaderLookup& headers, std::string_view method,
                                                 const Json& params, const Json* arguments,
                                                 const std::vector<ParamHeader>& param_headers) {
    static const Json empty = Json::object();

    // MCP-Protocol-Version against _meta.
    const auto version = headers("MCP-Protocol-Version");
    if (!version) return "the MCP-Protocol-Version header is missing";
    std::string body_version;
    if (auto meta = params.find("_meta"sv); meta != params.end() && meta->is_object())
        if (auto v = meta->find(protocol::meta_key::protocol_version); v != meta->end() && v->is_string())
            body_version = v->get<std::string>();
    // A body naming no revision is malformed, not mismatched: the protocol
    // layer answers it with -32602, as the revision asks.
    if (!body_version.empty() && *version != body_version)
        return "MCP-Protocol-Version header value '" + std::string(*version) + "' does not match body value '" +
               body_version + "'";

    // Mcp-Method against method.
    const auto method_header = headers("Mcp-Method");
    if (!method_header) return "the Mcp-Method header is missing";
    if (*method_header != method)
        return "Mcp-Method header value '" + std::string(*method_header) + "' does not match body value '" +
               std::string(method) + "'";

    // Mcp-Name against params.name or params.uri.
    // The Tasks extension routes tasks/get, tasks/update and tasks/cancel by params.taskId.
    const char* name_field = method == "tools/call" || method == "prompts/get"                               ? "name"
                             : method == "resources/read"                                                    ? "uri"
                             : method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel" ? "taskId"
                                                                                                             : nullptr;
    if (name_field) {
        const auto name_header = headers("Mcp-Name");
        if (!name_header) return std::string("the Mcp-Name header is missing (it carries params.") + name_field + ")";
        const auto decoded = decode_mcp_header_value(*name_header);
        if (!decoded) return "the Mcp-Name header holds characters a header may not, or broken Base64";
        const auto body = params.find(name_field);
        const std::string body_name = body != params.end() && body->is_string() ? body->get<std::string>() : "";
        if (*decoded != body_name)
            return "Mcp-Name header value '" + *decoded + "' does not match body value '" + body_name + "'";
    }

    // Mcp-Param-{name} for the tool's annotated arguments.
    if (!arguments) {
        const auto args_it = params.find("arguments"sv);
        arguments = args_it != params.end() ? &*args_it : &empty;
    }
    for (const auto& p : param_headers) {
        const std::string header_name = "Mcp-Param-" + p.name;
        const auto raw = headers(header_name);
        const Json* value = value_at(*arguments, p.path);
        const bool present = value && !value->is_null();
        if (!raw) {
            if (present) return "the " + header_name + " header is missing while the argument it mirrors is set";
            continue;
        }
        const auto decoded = decode_mcp_header_value(*raw);
        if (!decoded) return "the " + header_name + " header holds characters a header may not, or broken Base64";
        if (!present) return "the " + header_name + " header is set but the argument it mirrors is not";
        if (!header_matches(*decoded, *value))
            return header_name + " header value '" + *decoded + "' does not match body value " + value->dump();
    }
    return std::nullopt;
}

} // namespace gatehouse::transport
