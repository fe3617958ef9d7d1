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
// never the token) for at most `cache_for` and never past the token's exp; a
// refused one for `refused_cache_for`, so a token asked about again costs no
// second call. Each client address may cause at most
// `calls_per_address_per_minute` calls: made-up tokens cannot turn the host
// into a load on the authorization server.
class TokenIntrospection {
public:
    struct Endpoint {
        std::string url;
        std::string client_id;
        std::string client_secret;
        std::chrono::seconds cache_for{60};
        std::chrono::seconds refused_cache_for{30};
        unsigned calls_per_address_per_minute = 60;
        bool username_as_subject = false; // auth.introspection_username_as_subject
    };

    TokenIntrospection(Endpoint endpoint, ClaimRules rules, HttpFetcher& fetcher);

    // `client_address`: the peer the token came from.
    void verify(std::string token, const std::string& client_address, VerdictDone done);

private:
    struct Cached {
        TokenVerdict verdict; // accepted, or rejected with its reason
        std::chrono::steady_clock::time_point until;
    };
    struct CallWindow {
        std::chrono::steady_clock::time_point started;
        unsigned calls = 0;
    };
    using Clock = std::chrono::steady_clock;

    // Takes one call of the minute of `address`'s group (caller_group); 0,
    // or the seconds until one is free. Besides each group's bound, once
    // all groups together made kMaxCallsPerMinute calls this minute only
    // groups that made fewer than kFairShare are still served, and a group
    // new while kMaxAddresses groups are in this minute waits its turn.
    std::uint64_t take_call(const std::string& address, Clock::time_point now);
    void remember(const std::string& digest, const TokenVerdict& verdict, Clock::time_point until);

    Endpoint endpoint_;
    ClaimRules rules_;
    HttpFetcher& fetcher_;
    std::mutex mutex_;
    std::unordered_map<std::string, Cached> accepted_; // apart, so refusals never push out what was accepted
    std::unordered_map<std::string, Cached> refused_;
    std::unordered_map<std::string, CallWindow> calls_by_address_; // by caller_group
    CallWindow all_calls_;                                         // every group's, this minute
};

// Whom calls are counted against: an IPv4 address (an IPv4-mapped IPv6 one
// as IPv4), or an IPv6 address's /64, the least a single site is given, so
// that one client cannot take a fresh count with each address of its
// network. Text that is no address stands for itself.
std::string caller_group(const std::string& address);

} // namespace gatehouse::auth
