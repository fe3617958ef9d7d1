#pragma once

#include "auth/api_key_table.hpp"
#include "auth/http_fetcher.hpp"
#include "auth/jwt_verifier.hpp"
#include "auth/token_introspection.hpp"
#include "auth/token_verdict.hpp"
#include "config/config.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::auth {

// The HTTP transport's one question about a request: who is calling? Under
// auth.mode none nobody is asked (every caller is the local principal);
// otherwise the bearer token is checked by the configured mode alone — jwt,
// introspection or api_keys, never one falling back to another.
class RequestAuthenticator {
public:
    RequestAuthenticator(const config::AuthSettings& settings, const config::HttpSettings& http);
    ~RequestAuthenticator();
    RequestAuthenticator(const RequestAuthenticator&) = delete;
    RequestAuthenticator& operator=(const RequestAuthenticator&) = delete;

    bool enabled() const { return mode_ != Mode::none; }

    // Once the port is bound (it may have been 0): completes the default
    // resource URL and starts reading the authorization servers' keys.
    void start(std::uint16_t bound_port);

    // `done` runs at once or, when an authorization server must be asked,
    // later on another thread. `client_address`: the peer's IP address, what
    // calls to an introspection endpoint are counted by.
    void authenticate(std::optional<std::string_view> authorization, std::size_t header_count, std::string_view target,
                      const std::string& client_address, VerdictDone done);

    // RFC 9728: served at /.well-known/oauth-protected-resource and its
    // path-suffixed form.
    bool is_metadata_path(std::string_view path) const;
    std::string metadata_json() const;

    // The WWW-Authenticate header line (with CRLF) for a refused request.
    std::string challenge(const TokenVerdict& verdict) const;
    std::string insufficient_scope_challenge(const Principal& principal, const std::string& scope) const;

    const std::string& resource() const { return resource_; }

private:
    enum class Mode { none, jwt, introspection, api_keys };

    std::string challenge_with(const std::string& attributes) const;

    Mode mode_ = Mode::none;
    const config::AuthSettings settings_;
    std::string http_path_;
    std::string listen_host_;
    std::string resource_;
    std::string metadata_url_;
    std::string metadata_path_;
    std::unique_ptr<HttpFetcher> fetcher_;
    KeySources key_sources_; // before jwt_: its issuers' keys claim sources here
    std::unique_ptr<JwtVerifier> jwt_;
    std::unique_ptr<TokenIntrospection> introspection_;
    std::unique_ptr<ApiKeyTable> api_keys_;
};

} // namespace gatehouse::auth
