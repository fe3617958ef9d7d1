#pragma once

#include <string>
#include <string_view>

namespace gatehouse::upstream {

// What an upstream's 401 or 403 says of a Bearer token in its
// WWW-Authenticate header (RFC 6750 §3; RFC 9728 §5.1 adds
// resource_metadata): the parameters of its Bearer challenge, each empty
// when the header does not give it. Other schemes' challenges are skipped;
// a value longer than kMaxValue is left out, as is a header that does not
// parse past the point where it breaks.
struct BearerChallenge {
    std::string error;             // invalid_token, insufficient_scope, ...
    std::string scope;             // the scope the resource wants
    std::string resource_metadata; // the URL of its protected resource metadata

    static constexpr std::size_t kMaxValue = 2048;
    static BearerChallenge parse(std::string_view header);
};

} // namespace gatehouse::upstream
