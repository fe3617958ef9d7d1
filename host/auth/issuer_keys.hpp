#pragma once

#include "auth/http_fetcher.hpp"
#include "auth/json_web_key.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gatehouse::auth {

// Which issuer each JWK Set URL serves. A source is one issuer's alone: keys
// read for two issuers would let each sign tokens in the other's name.
// Thread-safe.
class KeySources {
public:
    // True when `uri` serves `issuer` (newly or already); false when it is
    // another issuer's, named in `owner`.
    bool claim(const std::string& uri, const std::string& issuer, std::string& owner);

private:
    std::mutex mutex_;
    std::map<std::string, std::string> issuer_of_;
};

// The signing keys of one authorization server: its JWK Set, found through
// its RFC 8414 metadata (or a configured jwks_uri), read in the background
// and kept. A token naming a key not (yet) known asks for a re-read, at most
// once per `min_refresh`; tokens signed with known keys never wait on it.
class IssuerKeys {
public:
    struct Timing {
        std::chrono::seconds refresh_interval{300};
        std::chrono::seconds min_refresh{10};
        // Keys not read again for this long are no longer trusted: an issuer
        // that withdrew a key (a leaked one) is obeyed within this bound even
        // while its key set cannot be read, rather than never.
        std::chrono::seconds max_stale{86400};
    };

    // `jwks_uri`: the issuer's own configured key source, empty to find it in
    // its metadata; either is claimed in `sources`, which outlives this.
    IssuerKeys(std::string issuer, std::string jwks_uri, Timing timing, HttpFetcher& fetcher, KeySources& sources);

    const std::string& issuer() const { return issuer_; }

    // Starts the first read and the periodic re-reads.
    void start();

    // The key `kid` for `alg`; without a kid, the only key of that alg.
    std::shared_ptr<const JsonWebKey> find(const std::string& kid, const std::string& alg) const;

    // Replaces the known keys with those of a JWK Set {"keys": [...]}; keys
    // of other types or algorithms are skipped. Returns how many were taken,
    // or throws std::invalid_argument when `set` is not a JWK Set.
    std::size_t replace_keys(const nlohmann::json& set);

    // Re-reads the keys for a token whose key is not known, then calls
    // `done(read_ok)`: at once (false) when a re-read ran too recently and
    // failed, at once (true) when it ran too recently and succeeded.
    void refresh_for_unknown_key(std::function<void(bool)> done);

private:
    void read();                                       // on the fetcher's thread
    void read_jwks(const std::string& uri);            // on the fetcher's thread
    void finish_read(bool ok, const std::string& why); // on the fetcher's thread
    void schedule_next();

    const std::string issuer_;
    const Timing timing_;
    HttpFetcher& fetcher_;
    KeySources& sources_;

    mutable std::mutex mutex_;
    std::string jwks_uri_; // configured or discovered
    std::map<std::string, std::shared_ptr<const JsonWebKey>> by_kid_;
    std::vector<std::shared_ptr<const JsonWebKey>> keys_;
    bool reading_ = false;
    std::uint64_t refresh_ = 0; // the one scheduled refresh that may still run
    bool last_read_ok_ = false;
    std::chrono::steady_clock::time_point last_read_started_{};
    std::chrono::steady_clock::time_point keys_taken_{}; // when keys_ were last replaced
    std::vector<std::function<void(bool)>> waiting_;
};

// Where RFC 8414 puts an issuer's metadata (the well-known segment goes
// between host and path), and the OpenID Connect location as a fallback.
std::string oauth_metadata_url(const std::string& issuer);
std::string openid_metadata_url(const std::string& issuer);

} // namespace gatehouse::auth
