#pragma once

#include "auth/http_fetcher.hpp"
#include "crypto/openssl.hpp"
#include "upstream/bearer_source.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gatehouse::upstream {

// The host's own access token for an HTTP upstream, from the upstream's
// authorization server by the OAuth 2.1 client credentials grant: a POST of
// grant_type=client_credentials (with the scope and, RFC 8707, the upstream
// as the resource) to the token endpoint, the client authenticated with HTTP
// Basic (client_secret_basic). Without a token_url the endpoint is found as
// an MCP client finds it: the upstream's protected resource metadata
// (RFC 9728: where a 401's WWW-Authenticate says, else path-aware, then at
// the root) names its authorization server, whose metadata (RFC 8414, then
// OpenID Connect discovery) names the endpoint. When none is found before
// the upstream was asked, the first request goes without a token, so its
// 401 can say where. A 403 insufficient_scope that names a scope gets a
// token for that scope as well (step-up), and the request is sent again
// once. The token is kept until shortly before it expires, or until the
// upstream refuses it; one request at a time fetches a new one, the others
// wait for it. Neither the secret nor a token is ever logged or shown.
class ClientCredentials final : public BearerSource {
public:
    struct Options {
        std::string family;
        std::string upstream_url; // the resource, unless `resource` says otherwise
        std::string token_url;    // empty: discovered
        std::string client_id, client_secret;
        std::string scope;    // empty: none asked for
        std::string resource; // empty: the upstream's metadata's, else upstream_url
        // Where discovery may send the client secret: an authorization
        // server on the upstream's own origin, or one of these issuers. An
        // upstream names its authorization server itself, and a hostile one
        // would name its own to be sent the secret.
        std::vector<std::string> authorization_servers;
        std::chrono::milliseconds timeout{10000};
        // How the authorization server's certificate is checked (its host
        // name always): the upstream's CA file and the system's trust store.
        crypto::TlsClientOptions tls;
    };
    // Opens no connection yet (the first current() does).
    explicit ClientCredentials(Options options);
    ~ClientCredentials() override;
    ClientCredentials(const ClientCredentials&) = delete;
    ClientCredentials& operator=(const ClientCredentials&) = delete;

    std::string current() override;
    bool refused(const std::string& token, const BearerChallenge& challenge) override;

    // How many tokens it has been given (the tests and the log count them).
    unsigned tokens_fetched() const;

private:
    using Clock = std::chrono::steady_clock;

    auth::FetchResult get(const std::string& url);
    auth::FetchResult post(const std::string& url, const std::string& body);
    std::string discover(); // the token endpoint; sets resource_ when the metadata names one
    // Whether discovery may send the client secret to this issuer.
    bool trusted_issuer(const std::string& issuer, const std::string& upstream_origin) const;
    void fetch(); // a new token_, under mutex_

    const Options options_;
    std::unique_ptr<auth::HttpFetcher> fetcher_;
    mutable std::mutex mutex_;
    std::string token_endpoint_, resource_, token_;
    std::string scope_;        // asked for: the configured one, and what a 403's challenge added
    std::string metadata_url_; // where a 401's WWW-Authenticate said the metadata is
    bool challenged_ = false;  // the upstream has refused a request, saying what it wants
    std::optional<Clock::time_point> undiscovered_since_; // no metadata found, and not challenged yet
    Clock::time_point issued_at_{}, renew_at_{};
    unsigned fetched_ = 0;
};

} // namespace gatehouse::upstream
