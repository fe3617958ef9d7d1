#include "auth/bearer_token.hpp"

#include "protocol/ascii_case.hpp"

#include <cctype>

namespace gatehouse::auth {

namespace {

bool query_names_access_token(std::string_view target) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return false;
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        if (pair.substr(0, pair.find('=')) == "access_token") return true;
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
    return false;
}

bool b64token_char(unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

} // namespace

BearerToken find_bearer_token(std::optional<std::string_view> authorization, std::size_t header_count,
                              std::string_view target) {
    BearerToken out;
    if (query_names_access_token(target)) {
        out.found = BearerToken::Found::malformed;
        out.problem = "an access token in the URL query is refused; send it in the Authorization header";
        return out;
    }
    if (!authorization) return out;
    if (header_count > 1) {
        out.found = BearerToken::Found::malformed;
        out.problem = "the request carries more than one Authorization header";
        return out;
    }
    std::string_view value = *authorization;
    constexpr std::string_view scheme = "bearer ";
    bool is_bearer = value.size() > scheme.size();
    for (std::size_t i = 0; is_bearer && i < scheme.size(); ++i)
        is_bearer = protocol::ascii_lower(value[i]) == scheme[i];
    if (!is_bearer) {
        out.found = BearerToken::Found::malformed;
        out.problem = "the Authorization header is not 'Bearer <token>'";
        return out;
    }
    value.remove_prefix(scheme.size());
    while (!value.empty() && value.front() == ' ')
        value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ')
        value.remove_suffix(1);
    std::size_t i = 0;
    while (i < value.size() && b64token_char(static_cast<unsigned char>(value[i])))
        ++i;
    while (i < value.size() && value[i] == '=')
        ++i;
    if (value.empty() || i != value.size()) {
        out.found = BearerToken::Found::malformed;
        out.problem = "the bearer token holds characters RFC 6750 does not allow";
        return out;
    }
    out.found = BearerToken::Found::token;
    out.token = std::string(value);
    return out;
}

} // namespace gatehouse::auth
