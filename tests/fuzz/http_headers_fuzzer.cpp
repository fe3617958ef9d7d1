// What an HTTP client controls of one 2026-07-28 POST besides the framing:
// its headers, its body and (through the tool it names) an inputSchema's
// x-mcp-header annotations. The input is split at NUL bytes into header
// lines ("Name: value"), the body and a schema; everything goes through the
// checks the HTTP transport runs: Host and Origin, the x-mcp-header scan,
// the Mcp-Name / Mcp-Param-* decoding and the header-against-body check.
#include "transport/http_access.hpp"
#include "transport/mcp_http_headers.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

using namespace gatehouse;
using protocol::Json;

namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

std::string_view next_part(std::string_view& rest) {
    const auto stop = rest.find('\0');
    const std::string_view part = rest.substr(0, stop);
    rest = stop == std::string_view::npos ? std::string_view() : rest.substr(stop + 1);
    return part;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    const std::string_view header_text = next_part(rest);
    const std::string_view body_text = next_part(rest);
    const std::string_view schema_text = next_part(rest);

    std::map<std::string, std::string> headers;
    for (std::size_t at = 0; at < header_text.size();) {
        const auto end = std::min(header_text.find('\n', at), header_text.size());
        const std::string_view line = header_text.substr(at, end - at);
        const auto colon = line.find(':');
        if (colon != std::string_view::npos)
            headers[lower(line.substr(0, colon))] = std::string(line.substr(colon + 1));
        at = end + 1;
    }
    const transport::HeaderLookup lookup = [&](std::string_view name) -> std::optional<std::string_view> {
        auto it = headers.find(lower(name));
        if (it == headers.end()) return std::nullopt;
        return it->second;
    };

    static const transport::HttpAccess access{config::HttpSettings{}};
    if (auto host = lookup("host")) (void)access.host_allowed(*host);
    if (auto origin = lookup("origin")) (void)access.origin_allowed(*origin);
    for (const auto& [_, value] : headers)
        (void)transport::decode_mcp_header_value(value);

    std::vector<schema::ParamHeader> params;
    const Json schema = Json::parse(schema_text, nullptr, false);
    if (!schema.is_discarded()) {
        try {
            params = schema::find_param_headers(schema);
        } catch (const std::invalid_argument&) {
            params.clear(); // the tool would be refused
        }
    }
    const Json body = Json::parse(body_text, nullptr, false);
    if (!body.is_discarded() && body.is_object()) (void)transport::check_request_headers(lookup, body, params);
    return 0;
}
