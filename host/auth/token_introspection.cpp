#include "auth/token_introspection.hpp"

#include "crypto/openssl.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace gatehouse::auth {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxCached = 10000;
constexpr std::size_t kMaxAddresses = 10000;
// Every client together: what an authorization server is asked in a minute
// for tokens this host has not seen, however many addresses ask. Past it,
// only addresses that asked fewer than kFairShare this minute are still
// asked for: one client with many addresses cannot lock every other out.
constexpr unsigned kMaxCallsPerMinute = 10000;
constexpr unsigned kFairShare = 5;
constexpr auto kCallWindow = std::chrono::minutes(1);

std::uint64_t seconds_left(Clock::time_point started, Clock::time_point now) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(started + kCallWindow - now);
    return static_cast<std::uint64_t>(std::max<std::int64_t>(1, left.count() + 1));
}

} // namespace

std::string caller_group(const std::string& address) {
    in6_addr v6{};
    if (::inet_pton(AF_INET6, address.c_str(), &v6) != 1) return address;
    char text[INET6_ADDRSTRLEN] = {};
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
        in_addr v4{};
        std::memcpy(&v4, &v6.s6_addr[12], sizeof v4);
        return ::inet_ntop(AF_INET, &v4, text, sizeof text) ? std::string(text) : address;
    }
    std::memset(&v6.s6_addr[8], 0, 8);
    return ::inet_ntop(AF_INET6, &v6, text, sizeof text) ? std::string(text) + "/64" : address;
}

TokenIntrospection::TokenIntrospection(Endpoint endpoint, ClaimRules rules, HttpFetcher& fetcher)
    : endpoint_(std::move(endpoint)), rules_(std::move(rules)), fetcher_(fetcher) {
    // RFC 7662 makes exp optional; an active answer without one is bounded by the cache time.
    rules_.require_expiry = false;
}

std::uint64_t TokenIntrospection::take_call(const std::string& address, Clock::time_point now) {
    if (now - all_calls_.started >= kCallWindow) all_calls_ = {now, 0};
    const std::string group = caller_group(address);
    if (calls_by_address_.size() >= kMaxAddresses && !calls_by_address_.count(group)) {
        for (auto it = calls_by_address_.begin(); it != calls_by_address_.end();)
            it = now - it->second.started >= kCallWindow ? calls_by_address_.erase(it) : std::next(it);
        // Still full, every entry this minute's: a new group waits for the
        // oldest window to end. Starting the table over would give every
        // group a fresh count, so that cycling through many addresses was
        // never bounded.
        if (calls_by_address_.size() >= kMaxAddresses) {
            auto oldest = Clock::time_point::max();
            for (const auto& [key, window] : calls_by_address_)
                oldest = std::min(oldest, window.started);
            return seconds_left(oldest, now);
        }
    }
    auto& window = calls_by_address_[group];
    if (now - window.started >= kCallWindow) window = {now, 0};
    if (window.calls >= endpoint_.calls_per_address_per_minute) return seconds_left(window.started, now);
    if (all_calls_.calls >= kMaxCallsPerMinute && window.calls >= kFairShare)
        return seconds_left(all_calls_.started, now);
    ++window.calls;
    ++all_calls_.calls;
    return 0;
}

void TokenIntrospection::remember(const std::string& digest, const TokenVerdict& verdict, Clock::time_point until) {
    auto& table = verdict.kind == TokenVerdict::Kind::accepted ? accepted_ : refused_;
    if (table.size() >= kMaxCached) table.clear();
    table[digest] = {verdict, until};
}

void TokenIntrospection::verify(std::string token, const std::string& client_address, VerdictDone done) {
    const std::string digest = crypto::sha256_hex(token);
    std::optional<TokenVerdict> known;
    {
        std::lock_guard lock(mutex_);
        const auto now = Clock::now();
        for (auto* table : {&accepted_, &refused_}) {
            if (const auto it = table->find(digest); it != table->end() && !known) {
                if (now < it->second.until)
                    known = it->second.verdict;
                else
                    table->erase(it);
            }
        }
        if (!known)
            if (const auto wait_s = take_call(client_address, now)) {
                spdlog::warn("auth: unknown tokens from {} (counted as {}) wait {} s: at most {} a minute are "
                             "asked about per address, {} from all addresses together",
                             client_address, caller_group(client_address), wait_s,
                             endpoint_.calls_per_address_per_minute, kMaxCallsPerMinute);
                known = TokenVerdict::throttle("too many unknown tokens from this address", wait_s);
            }
    }
    // Outside the lock: `done` may go on to answer the request on this thread.
    if (known) return done(std::move(*known));
    const std::string body = "token=" + form_escape(token) + "&token_type_hint=access_token";
    // RFC 6749 §2.3.1: both halves of client credentials are form-encoded first.
    const std::string credentials = form_escape(endpoint_.client_id) + ":" + form_escape(endpoint_.client_secret);
    fetcher_.post_form(endpoint_.url, body, credentials, [this, digest, done = std::move(done)](FetchResult r) {
        if (!r.ok()) {
            spdlog::warn("auth: introspection at {} failed: {}", endpoint_.url, r.failure());
            return done(TokenVerdict::cannot_check("the introspection endpoint did not answer"));
        }
        const auto answer = parse_claims_object(r.body);
        if (!answer.is_object() || !answer.contains("active") || !answer["active"].is_boolean()) {
            spdlog::warn("auth: introspection at {} answered no boolean 'active'", endpoint_.url);
            return done(TokenVerdict::cannot_check("the introspection endpoint answered nonsense"));
        }
        TokenVerdict verdict = TokenVerdict::reject("the token is not active");
        nlohmann::json claims = answer;
        if (answer["active"].get<bool>()) {
            if (!claims.contains("sub") && claims.contains("username")) {
                if (endpoint_.username_as_subject)
                    claims["sub"] = claims["username"];
                else
                    spdlog::warn("auth: the introspection answer of {} names its caller by username only (no sub); "
                                 "the token is refused. If that server never renames or reuses usernames, set "
                                 "auth.introspection_username_as_subject: true",
                                 endpoint_.url);
            }
            verdict = check_claims(claims, rules_, std::chrono::system_clock::now());
        }
        const auto now = Clock::now();
        if (verdict.kind != TokenVerdict::Kind::accepted) {
            if (endpoint_.refused_cache_for.count() > 0) {
                std::lock_guard lock(mutex_);
                remember(digest, verdict, now + endpoint_.refused_cache_for);
            }
        } else if (endpoint_.cache_for.count() > 0) {
            auto until = now + endpoint_.cache_for;
            if (const auto exp = claims.find("exp"); exp != claims.end() && exp->is_number()) {
                const double now_s =
                    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
                const double left =
                    std::clamp(exp->get<double>() - now_s, 0.0, static_cast<double>(endpoint_.cache_for.count()));
                until = std::min(until, now + std::chrono::seconds(static_cast<std::int64_t>(left)));
            }
            std::lock_guard lock(mutex_);
            remember(digest, verdict, until);
        }
        done(std::move(verdict));
    });
}

} // namespace gatehouse::auth
