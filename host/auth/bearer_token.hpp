#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::auth {

// The bearer token of one HTTP request (RFC 6750 §2.1), taken from its
// Authorization header only.
struct BearerToken {
    enum class Found { none, token, malformed };
    Found found = Found::none;
    std::string token;
    std::string problem; // why it is malformed
};

// `authorization`: the header's value, nullopt without one; `header_count`:
// how many Authorization headers the request carried; `target`: the request
// target, whose query may not carry the token (RFC 6750 §2.3 is not offered).
BearerToken find_bearer_token(std::optional<std::string_view> authorization, std::size_t header_count,
                              std::string_view target);

} // namespace gatehouse::auth
