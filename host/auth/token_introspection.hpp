#pragma once

#include "auth/http_fetcher.hpp"
#include "auth/token_claims.hpp"
#include "auth/token_verdict.hpp"

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gatehouse::auth {

// Opaque tokens, asked about at the authorization server's RFC 7662
// introspection endpoint. An active answer is kept (by the token's SHA-256,
// never the token) for at most `cache_for` and never past the token's exp.
class TokenIntrospection {
public:
    struct Endpoint {
        std::string url;
        std::string client_id;
        std::string client_secret;
        std::chrono::seconds cache_for{60};
    };

    TokenIntrospection(Endpoint endpoint, ClaimRules rules, HttpFetcher& fetcher);

    void verify(std::string token, VerdictDone done);

private:
    struct Cached {
        Principal principal;
        std::chrono::steady_clock::time_point until;
    };

    Endpoint endpoint_;
    ClaimRules rules_;
    HttpFetcher& fetcher_;
    std::mutex mutex_;
    std::unordered_map<std::string, Cached> cache_;
};

} // namespace gatehouse::auth
