#include "auth/request_authenticator.hpp"

#include "auth/bearer_token.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace gatehouse::auth {

namespace {

// error_description is a quoted-string; keep it to what needs no escaping.
std::string quotable(std::string text) {
    for (char& c : text)
        if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
            c = '\'';
    return text;
}

std::pair<std::string, std::string> split_origin(const std::string& url) {
    const auto scheme_end = url.find("://");
    const auto path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
    if (path_start == std::string::npos) return {url, ""};
    return {url.substr(0, path_start), url.substr(path_start)};
}

} // namespace

RequestAuthenticator::RequestAuthenticator(const config::AuthSettings& settings, const config::HttpSettings& http)
    : settings_(settings), http_path_(http.path), listen_host_(http.listen_host), resource_(settings.resource) {
    if (settings.mode == "jwt")
        mode_ = Mode::jwt;
    else if (settings.mode == "introspection")
        mode_ = Mode::introspection;
    else if (settings.mode == "api_keys")
        mode_ = Mode::api_keys;
}

RequestAuthenticator::~RequestAuthenticator() {
    // The fetcher's thread calls into the verifiers: it stops first. The
    // verifiers' timers live on its io_context, so they go next (members
    // in reverse order), the fetcher last.
    if (fetcher_) fetcher_->stop();
}

void RequestAuthenticator::start(std::uint16_t bound_port) {
    if (!enabled()) return;
    if (resource_.empty()) {
        const std::string host = listen_host_.find(':') != std::string::npos ? "[" + listen_host_ + "]" : listen_host_;
        resource_ = "http://" + host + ":" + std::to_string(bound_port) + http_path_;
    }
    const auto [origin, path] = split_origin(resource_);
    metadata_path_ = "/.well-known/oauth-protected-resource" + path;
    metadata_url_ = origin + metadata_path_;

    ClaimRules rules;
    rules.audiences.push_back(resource_);
    rules.audiences.insert(rules.audiences.end(), settings_.audiences.begin(), settings_.audiences.end());
    rules.issuers = settings_.issuers;
    rules.skew = std::chrono::seconds(settings_.clock_skew_s);
    rules.prefix_subject_with_issuer = settings_.issuers.size() > 1;

    if (mode_ == Mode::jwt || mode_ == Mode::introspection)
        fetcher_ = make_http_fetcher(std::chrono::milliseconds(settings_.fetch_timeout_ms));
    switch (mode_) {
    case Mode::jwt: {
        std::map<std::string, std::unique_ptr<IssuerKeys>> issuers;
        const IssuerKeys::Timing timing{std::chrono::seconds(settings_.jwks_refresh_interval_s),
                                        std::chrono::seconds(settings_.jwks_min_refresh_s),
                                        std::chrono::seconds(settings_.jwks_max_stale_s)};
        for (const auto& issuer : settings_.issuers) {
            const auto own = settings_.issuer_jwks_uris.find(issuer);
            issuers.emplace(
                issuer, std::make_unique<IssuerKeys>(issuer, own == settings_.issuer_jwks_uris.end() ? "" : own->second,
                                                     timing, *fetcher_, key_sources_));
        }
        jwt_ = std::make_unique<JwtVerifier>(rules, std::move(issuers));
        jwt_->start();
        break;
    }
    case Mode::introspection:
        introspection_ = std::make_unique<TokenIntrospection>(
            TokenIntrospection::Endpoint{settings_.introspection_endpoint, settings_.client_id, settings_.client_secret,
                                         std::chrono::seconds(settings_.introspection_cache_s),
                                         std::chrono::seconds(settings_.introspection_refused_cache_s),
                                         settings_.introspection_calls_per_address_per_minute,
                                         settings_.introspection_username_as_subject},
            rules, *fetcher_);
        break;
    case Mode::api_keys: api_keys_ = std::make_unique<ApiKeyTable>(settings_.api_keys); break;
    case Mode::none: break;
    }
    spdlog::info("auth: bearer tokens required ({}); resource {}, metadata at {}", settings_.mode, resource_,
                 metadata_url_);
}

void RequestAuthenticator::authenticate(std::optional<std::string_view> authorization, std::size_t header_count,
                                        std::string_view target, const std::string& client_address, VerdictDone done) {
    auto bearer = find_bearer_token(authorization, header_count, target);
    switch (bearer.found) {
    case BearerToken::Found::none: return done({TokenVerdict::Kind::missing, {}, "no bearer token"});
    case BearerToken::Found::malformed: return done({TokenVerdict::Kind::malformed, {}, bearer.problem});
    case BearerToken::Found::token: break;
    }
    switch (mode_) {
    case Mode::jwt: return jwt_->verify(std::move(bearer.token), std::move(done));
    case Mode::introspection: return introspection_->verify(std::move(bearer.token), client_address, std::move(done));
    case Mode::api_keys: return done(api_keys_->verify(bearer.token));
    case Mode::none: break;
    }
    done(TokenVerdict::reject("this server checks no tokens"));
}

bool RequestAuthenticator::is_metadata_path(std::string_view path) const {
    return enabled() && (path == "/.well-known/oauth-protected-resource" || path == metadata_path_);
}

std::string RequestAuthenticator::metadata_json() const {
    nlohmann::json doc = {{"resource", resource_},
                          {"authorization_servers", settings_.issuers},
                          {"bearer_methods_supported", {"header"}}};
    if (!settings_.scopes_supported.empty()) doc["scopes_supported"] = settings_.scopes_supported;
    if (mode_ == Mode::jwt) doc["resource_signing_alg_values_supported"] = {"RS256", "ES256", "EdDSA"};
    return doc.dump();
}

std::string RequestAuthenticator::challenge_with(const std::string& attributes) const {
    std::string line = "WWW-Authenticate: Bearer resource_metadata=\"" + metadata_url_ + "\"";
    if (!attributes.empty()) line += ", " + attributes;
    return line + "\r\n";
}

std::string RequestAuthenticator::challenge(const TokenVerdict& verdict) const {
    std::string scope;
    if (!settings_.scopes_supported.empty()) {
        for (const auto& s : settings_.scopes_supported)
            scope += (scope.empty() ? "" : " ") + s;
        scope = "scope=\"" + quotable(scope) + "\"";
    }
    switch (verdict.kind) {
    case TokenVerdict::Kind::missing: return challenge_with(scope);
    case TokenVerdict::Kind::malformed:
        return challenge_with("error=\"invalid_request\", error_description=\"" + quotable(verdict.reason) + "\"");
    default:
        return challenge_with("error=\"invalid_token\", error_description=\"" + quotable(verdict.reason) + "\"" +
                              (scope.empty() ? "" : ", " + scope));
    }
}

std::string RequestAuthenticator::insufficient_scope_challenge(const Principal& principal,
                                                               const std::string& scope) const {
    // The scopes already held plus the one missing: a client that asks for
    // exactly these keeps what it could do and gains the rest.
    std::string scopes;
    for (const auto& s : principal.scopes)
        scopes += s + " ";
    scopes += scope;
    return challenge_with("error=\"insufficient_scope\", scope=\"" + quotable(scopes) +
                          "\", error_description=\"this tool needs the scope " + quotable(scope) + "\"");
}

} // namespace gatehouse::auth
