#include "auth/issuer_keys.hpp"

#include "protocol/json_rpc.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <optional>
#include <stdexcept>

namespace gatehouse::auth {

namespace {

// scheme://host[:port] and the path after it, of an http(s) URL.
std::pair<std::string, std::string> split_origin(const std::string& url) {
    const auto scheme_end = url.find("://");
    const auto path_start = scheme_end == std::string::npos ? std::string::npos : url.find('/', scheme_end + 3);
    if (path_start == std::string::npos) return {url, ""};
    std::string path = url.substr(path_start);
    if (path == "/") path.clear();
    return {url.substr(0, path_start), path};
}

} // namespace

std::string oauth_metadata_url(const std::string& issuer) {
    const auto [origin, path] = split_origin(issuer);
    return origin + "/.well-known/oauth-authorization-server" + path;
}

std::string openid_metadata_url(const std::string& issuer) {
    std::string base = issuer;
    if (!base.empty() && base.back() == '/') base.pop_back();
    return base + "/.well-known/openid-configuration";
}

bool KeySources::claim(const std::string& uri, const std::string& issuer, std::string& owner) {
    std::lock_guard lock(mutex_);
    const auto [it, fresh] = issuer_of_.emplace(uri, issuer);
    owner = it->second;
    return fresh || it->second == issuer;
}

IssuerKeys::IssuerKeys(std::string issuer, std::string jwks_uri, Timing timing, HttpFetcher& fetcher,
                       KeySources& sources)
    : issuer_(std::move(issuer)), timing_(timing), fetcher_(fetcher), sources_(sources),
      jwks_uri_(std::move(jwks_uri)) {
    // Configured sources are claimed before any metadata is read, so no
    // other issuer's metadata can name one of them as its own.
    std::string owner;
    if (!jwks_uri_.empty() && !sources_.claim(jwks_uri_, issuer_, owner))
        throw std::invalid_argument("the issuers " + owner + " and " + issuer_ + " both take their keys from " +
                                    jwks_uri_);
}

void IssuerKeys::start() {
    fetcher_.post([this] {
        {
            std::lock_guard lock(mutex_);
            if (reading_) return;
            reading_ = true;
            last_read_started_ = std::chrono::steady_clock::now();
        }
        read();
    });
}

std::shared_ptr<const JsonWebKey> IssuerKeys::find(const std::string& kid, const std::string& alg) const {
    std::lock_guard lock(mutex_);
    // Keys past max_stale are not found: the token asks for a re-read, and
    // is answered "cannot be checked" (503) while that read fails.
    if (std::chrono::steady_clock::now() - keys_taken_ > timing_.max_stale) return nullptr;
    if (!kid.empty()) {
        const auto it = by_kid_.find(kid);
        if (it == by_kid_.end() || it->second->algorithm() != alg) return nullptr;
        return it->second;
    }
    std::shared_ptr<const JsonWebKey> only;
    for (const auto& key : keys_) {
        if (key->algorithm() != alg) continue;
        if (only) return nullptr; // ambiguous without a kid
        only = key;
    }
    return only;
}

void IssuerKeys::refresh_for_unknown_key(std::function<void(bool)> done) {
    std::optional<bool> answer_now;
    {
        std::lock_guard lock(mutex_);
        const auto now = std::chrono::steady_clock::now();
        if (!reading_ && now - last_read_started_ < timing_.min_refresh) {
            answer_now = last_read_ok_;
        } else {
            waiting_.push_back(std::move(done));
            if (reading_) return;
            reading_ = true;
            last_read_started_ = now;
        }
    }
    // Outside the lock: `done` verifies again and looks keys up.
    if (answer_now) return done(*answer_now);
    fetcher_.post([this] { read(); });
}

void IssuerKeys::read() {
    std::string uri;
    {
        std::lock_guard lock(mutex_);
        uri = jwks_uri_;
    }
    if (!uri.empty()) return read_jwks(uri);
    // Discover the JWK Set from the issuer's metadata: RFC 8414 first, then OpenID Connect.
    fetcher_.get(oauth_metadata_url(issuer_), [this](FetchResult oauth) {
        const auto take = [this](const FetchResult& r, const std::string& where) -> bool {
            if (!r.ok()) return false;
            const auto metadata = nlohmann::json::parse(r.body, nullptr, false);
            if (!metadata.is_object() || protocol::text_member(metadata, "issuer") != issuer_ ||
                !metadata.contains("jwks_uri") || !metadata["jwks_uri"].is_string()) {
                spdlog::warn("auth: the metadata at {} does not name issuer {} with a jwks_uri", where, issuer_);
                return false;
            }
            const auto uri = metadata["jwks_uri"].get<std::string>();
            // Keys that come over plain HTTP are anyone's on the path: an
            // https issuer's key set must be https too (RFC 8414 §2).
            if (issuer_.rfind("https://", 0) == 0 && uri.rfind("https://", 0) != 0) {
                finish_read(false, "the metadata at " + where + " names the JWK Set " + uri +
                                       ", which is not https; keys of an https issuer are read over https only");
                return true;
            }
            if (std::string owner; !sources_.claim(uri, issuer_, owner)) {
                finish_read(false, "the metadata at " + where + " names the JWK Set " + uri +
                                       ", the key source of issuer " + owner + "; it is not used for " + issuer_);
                return true;
            }
            {
                std::lock_guard lock(mutex_);
                jwks_uri_ = uri;
            }
            read_jwks(uri);
            return true;
        };
        if (take(oauth, oauth_metadata_url(issuer_))) return;
        fetcher_.get(openid_metadata_url(issuer_), [this, take, oauth](FetchResult openid) {
            if (take(openid, openid_metadata_url(issuer_))) return;
            finish_read(false, "no authorization server metadata at " + oauth_metadata_url(issuer_) + " (" +
                                   oauth.failure() + ") or " + openid_metadata_url(issuer_) + " (" + openid.failure() +
                                   ")");
        });
    });
}

std::size_t IssuerKeys::replace_keys(const nlohmann::json& set) {
    if (!set.is_object() || !set.contains("keys") || !set["keys"].is_array())
        throw std::invalid_argument("a JWK Set is {\"keys\": [...]}");
    std::map<std::string, std::shared_ptr<const JsonWebKey>> by_kid;
    std::vector<std::shared_ptr<const JsonWebKey>> keys;
    for (const auto& jwk : set["keys"]) {
        try {
            auto key = std::make_shared<const JsonWebKey>(JsonWebKey::parse(jwk));
            if (!key->kid().empty()) by_kid[key->kid()] = key;
            keys.push_back(std::move(key));
        } catch (const std::invalid_argument& e) {
            // Sets often carry encryption keys or other algorithms: skip those alone.
            spdlog::debug("auth: skipping a key of {} ({}): {}", issuer_, protocol::text_member(jwk, "kid"), e.what());
        }
    }
    std::lock_guard lock(mutex_);
    by_kid_ = std::move(by_kid);
    keys_ = std::move(keys);
    keys_taken_ = std::chrono::steady_clock::now();
    return keys_.size();
}

void IssuerKeys::read_jwks(const std::string& uri) {
    fetcher_.get(uri, [this, uri](FetchResult r) {
        if (!r.ok()) return finish_read(false, "the JWK Set at " + uri + " could not be read: " + r.failure());
        try {
            replace_keys(nlohmann::json::parse(r.body, nullptr, false));
        } catch (const std::invalid_argument&) {
            return finish_read(false, "the JWK Set at " + uri + " is not {\"keys\": [...]}");
        }
        finish_read(true, {});
    });
}

void IssuerKeys::finish_read(bool ok, const std::string& why) {
    std::vector<std::function<void(bool)>> waiting;
    std::size_t count = 0;
    bool stale = false;
    {
        std::lock_guard lock(mutex_);
        reading_ = false;
        last_read_ok_ = ok;
        waiting.swap(waiting_);
        count = keys_.size();
        stale = count > 0 && std::chrono::steady_clock::now() - keys_taken_ > timing_.max_stale;
    }
    if (ok)
        spdlog::info("auth: {} signing key(s) of {} loaded", count, issuer_);
    else if (stale)
        spdlog::error("auth: {}; the keys known were read more than {} s ago (auth.jwks_max_stale_s), so tokens "
                      "they sign are not accepted until the key set is read again",
                      why, timing_.max_stale.count());
    else
        spdlog::warn("auth: {}; keys already known stay in use", why);
    for (auto& done : waiting)
        done(ok);
    schedule_next();
}

void IssuerKeys::schedule_next() {
    // Only the latest refresh counts: a read between them starts the wait over.
    std::uint64_t refresh;
    {
        std::lock_guard lock(mutex_);
        refresh = ++refresh_;
    }
    fetcher_.post_after(timing_.refresh_interval, [this, refresh] {
        {
            std::lock_guard lock(mutex_);
            if (refresh != refresh_ || reading_) return;
            reading_ = true;
            last_read_started_ = std::chrono::steady_clock::now();
        }
        read();
    });
}

} // namespace gatehouse::auth
