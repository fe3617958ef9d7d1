#include "auth/token_introspection.hpp"

#include "crypto/openssl.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace gatehouse::auth {

namespace {

constexpr std::size_t kMaxCached = 10000;

} // namespace

TokenIntrospection::TokenIntrospection(Endpoint endpoint, ClaimRules rules, HttpFetcher& fetcher)
    : endpoint_(std::move(endpoint)), rules_(std::move(rules)), fetcher_(fetcher) {
    // RFC 7662 makes exp optional; an active answer without one is bounded by the cache time.
    rules_.require_expiry = false;
}

void TokenIntrospection::verify(std::string token, VerdictDone done) {
    const std::string digest = crypto::sha256_hex(token);
    {
        std::lock_guard lock(mutex_);
        if (const auto it = cache_.find(digest); it != cache_.end()) {
            if (std::chrono::steady_clock::now() < it->second.until)
                return done(TokenVerdict::accept(it->second.principal));
            cache_.erase(it);
        }
    }
    const std::string body = "token=" + form_escape(token) + "&token_type_hint=access_token";
    // RFC 6749 §2.3.1: both halves of client credentials are form-encoded first.
    const std::string credentials = form_escape(endpoint_.client_id) + ":" + form_escape(endpoint_.client_secret);
    fetcher_.post_form(endpoint_.url, body, credentials, [this, digest, done = std::move(done)](FetchResult r) {
        if (!r.ok()) {
            spdlog::warn("auth: introspection at {} failed: {}", endpoint_.url, r.failure());
            return done(TokenVerdict::cannot_check("the introspection endpoint did not answer"));
        }
        const auto answer = nlohmann::json::parse(r.body, nullptr, false);
        if (!answer.is_object() || !answer.contains("active") || !answer["active"].is_boolean()) {
            spdlog::warn("auth: introspection at {} answered no boolean 'active'", endpoint_.url);
            return done(TokenVerdict::cannot_check("the introspection endpoint answered nonsense"));
        }
        if (!answer["active"].get<bool>()) return done(TokenVerdict::reject("the token is not active"));
        nlohmann::json claims = answer;
        if (!claims.contains("sub") && claims.contains("username")) claims["sub"] = claims["username"];
        auto verdict = check_claims(claims, rules_, std::chrono::system_clock::now());
        if (verdict.kind == TokenVerdict::Kind::accepted && endpoint_.cache_for.count() > 0) {
            auto until = std::chrono::steady_clock::now() + endpoint_.cache_for;
            if (const auto exp = claims.find("exp"); exp != claims.end() && exp->is_number()) {
                const double now_s =
                    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
                const double left =
                    std::clamp(exp->get<double>() - now_s, 0.0, static_cast<double>(endpoint_.cache_for.count()));
                until = std::min(until, std::chrono::steady_clock::now() +
                                            std::chrono::seconds(static_cast<std::int64_t>(left)));
            }
            std::lock_guard lock(mutex_);
            if (cache_.size() >= kMaxCached) cache_.clear();
            cache_[digest] = {verdict.principal, until};
        }
        done(std::move(verdict));
    });
}

} // namespace gatehouse::auth
