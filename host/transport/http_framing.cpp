#include "transport/http_framing.hpp"

#include "protocol/ascii_case.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

namespace gatehouse::transport {

namespace http = boost::beast::http;
using protocol::equals_ignoring_ascii_case;
using protocol::starts_with_ignoring_ascii_case;

namespace {

std::string_view view(boost::beast::string_view text) {
    return {text.data(), text.size()};
}

// The MCP headers Beast has no field constant for, as the specs spell them.
constexpr std::array<std::string_view, 4> kMcpSingletons{"MCP-Protocol-Version", "Mcp-Method", "Mcp-Name",
                                                         "Mcp-Session-Id"};

} // namespace

std::optional<HeaderRefusal> refuse_transfer_encoding(const http::request_header<http::fields>& request) {
    const auto [first, last] = request.equal_range(http::field::transfer_encoding);
    if (first == last) return std::nullopt;
    if (request.version() < 11)
        return HeaderRefusal{400, "HTTP/1.0 has no Transfer-Encoding; send the body with a Content-Length, or use "
                                  "HTTP/1.1."};
    // Every Transfer-Encoding line together is one list of codings.
    std::vector<std::string_view> codings;
    std::string sent;
    for (auto it = first; it != last; ++it) {
        const std::string_view value = view(it->value());
        if (!sent.empty()) sent += ", ";
        sent += value;
        std::size_t start = 0;
        while (start <= value.size()) {
            const auto comma = std::min(value.find(',', start), value.size());
            std::string_view coding = value.substr(start, comma - start);
            while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
                coding.remove_prefix(1);
            while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
                coding.remove_suffix(1);
            if (!coding.empty()) codings.push_back(coding);
            start = comma + 1;
        }
    }
    const auto chunked = [](std::string_view c) { return equals_ignoring_ascii_case(c, "chunked"); };
    if (codings.size() == 1 && chunked(codings.front())) return std::nullopt;
    if (codings.empty() || !chunked(codings.back()) || std::count_if(codings.begin(), codings.end(), chunked) > 1)
        return HeaderRefusal{400, "Transfer-Encoding '" + sent +
                                      "' does not end the body with chunked, once: its length cannot be told. Send "
                                      "Transfer-Encoding: chunked alone, or a Content-Length."};
    return HeaderRefusal{501, "Transfer-Encoding '" + sent +
                                  "' applies a coding this server does not decode; send Transfer-Encoding: chunked "
                                  "alone, or a Content-Length."};
}

std::optional<HeaderRefusal> refuse_repeated_header(const http::request_header<http::fields>& request) {
    // One pass over the fields, a bit per name: this runs on every request.
    unsigned seen = 0;
    std::vector<std::string_view> params; // Mcp-Param-* names, rare
    const auto twice = [](std::string_view name) {
        return HeaderRefusal{400,
                             "The request carries the " + std::string(name) + " header more than once; send it once."};
    };
    for (const auto& field : request) {
        unsigned bit = 0;
        std::string_view name;
        switch (field.name()) {
        case http::field::host: bit = 1u << 0, name = "Host"; break;
        case http::field::origin: bit = 1u << 1, name = "Origin"; break;
        case http::field::authorization: bit = 1u << 2, name = "Authorization"; break;
        case http::field::content_type: bit = 1u << 3, name = "Content-Type"; break;
        case http::field::unknown: {
            const std::string_view sent = view(field.name_string());
            if (!starts_with_ignoring_ascii_case(sent, "mcp-")) continue;
            if (starts_with_ignoring_ascii_case(sent, "mcp-param-")) {
                const auto earlier = std::find_if(params.begin(), params.end(), [&](std::string_view p) {
                    return equals_ignoring_ascii_case(p, sent);
                });
                if (earlier != params.end()) return twice(*earlier);
                params.push_back(sent);
                continue;
            }
            for (std::size_t i = 0; i < kMcpSingletons.size(); ++i)
                if (equals_ignoring_ascii_case(sent, kMcpSingletons[i])) {
                    bit = 1u << (4 + i);
                    name = kMcpSingletons[i];
                }
            break;
        }
        default: continue;
        }
        if (bit == 0) continue;
        if (seen & bit) return twice(name);
        seen |= bit;
    }
    return std::nullopt;
}

std::size_t field_bytes(const http::fields::value_type& field) {
    return field.name_string().size() + field.value().size() + 4;
}

} // namespace gatehouse::transport
