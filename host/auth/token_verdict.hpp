#pragma once

#include "auth/principal.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace gatehouse::auth {

// What checking one bearer token decided. `reason` is for the
// WWW-Authenticate error_description and the log: it never holds the token.
struct TokenVerdict {
    enum class Kind {
        accepted,    // `principal` is the caller
        missing,     // no bearer token at all: 401 without an error code (RFC 6750 §3.1)
        malformed,   // the Authorization header is not one bearer token: 400 invalid_request
        rejected,    // invalid, expired, for another resource, unknown: 401 invalid_token
        unavailable, // the check itself could not run (authorization server unreachable): 503
        throttled    // not checked: this client asked about too many unknown tokens of late: 429
    };
    Kind kind = Kind::rejected;
    Principal principal;
    std::string reason;
    std::uint64_t retry_after_s = 0; // throttled: when to ask again

    static TokenVerdict accept(Principal p) { return {Kind::accepted, std::move(p), {}}; }
    static TokenVerdict reject(std::string why) { return {Kind::rejected, {}, std::move(why)}; }
    static TokenVerdict cannot_check(std::string why) { return {Kind::unavailable, {}, std::move(why)}; }
    static TokenVerdict throttle(std::string why, std::uint64_t retry_after_s) {
        return {Kind::throttled, {}, std::move(why), retry_after_s};
    }
};

using VerdictDone = std::function<void(TokenVerdict)>;

} // namespace gatehouse::auth
