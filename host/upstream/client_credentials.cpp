#include "upstream/client_credentials.hpp"

#include "protocol/ascii_case.hpp"
#include "protocol/utf8_text.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <future>
#include <stdexcept>
#include <vector>

namespace gatehouse::upstream {

using Json = nlohmann::json;

namespace {

constexpr std::size_t kMaxTokenBytes = 8 * 1024;
constexpr std::size_t kMaxScopeBytes = 1024;
// How long the host goes without a token, when it found no metadata and the
// upstream has refused nothing, before it looks again.
constexpr std::chrono::seconds kLookAgainAfter{60};
// A token is renewed this long before it expires (at most a tenth of its life).
constexpr std::chrono::seconds kRenewAhead{60};
// A token the upstream refuses within this of its issue is not replaced for
// that request: the next would fare no better, and the server would be asked
// once per call.
constexpr std::chrono::seconds kYoungToken{1};

// scheme://authority and the path (no query, no trailing '/') of a URL.
struct UrlParts {
    std::string origin, path;
};

UrlParts split(const std::string& url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) throw std::runtime_error("'" + url + "' is not an absolute URL");
    const auto path_at = url.find_first_of("/?#", scheme_end + 3);
    UrlParts parts{url.substr(0, path_at), ""};
    if (path_at != std::string::npos && url[path_at] == '/') {
        parts.path = url.substr(path_at, url.find_first_of("?#", path_at) - path_at);
        while (!parts.path.empty() && parts.path.back() == '/')
            parts.path.pop_back();
    }
    return parts;
}

// What a server put in a sentence of ours: printable, and short.
std::string shown_text(const Json& value) {
    return protocol::quoted_text(
        value.is_string() ? value.get<std::string>() : value.dump(-1, ' ', false, Json::error_handler_t::replace), 200);
}

std::string without_trailing_slash(std::string url) {
    while (!url.empty() && url.back() == '/')
        url.pop_back();
    return url;
}

// split(), or nothing for what is not an absolute URL.
UrlParts split_or_empty(const std::string& url) {
    try {
        return split(url);
    } catch (const std::runtime_error&) {
        return {};
    }
}

// The scopes of `have` and then those of `more` it lacks, space-separated.
std::string joined_scope(const std::string& have, const std::string& more) {
    std::vector<std::string> scopes;
    const auto add = [&](const std::string& text) {
        std::size_t at = 0;
        while (at < text.size()) {
            const auto end = std::min(text.find(' ', at), text.size());
            if (end > at) {
                std::string scope = text.substr(at, end - at);
                if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) scopes.push_back(std::move(scope));
            }
            at = end + 1;
        }
    };
    add(have);
    add(more);
    std::string out;
    for (const auto& scope : scopes)
        out += (out.empty() ? "" : " ") + scope;
    return out;
}

bool header_safe(const std::string& token) {
    for (unsigned char c : token)
        if (c <= 0x20 || c >= 0x7f) return false;
    return true;
}

} // namespace

ClientCredentials::ClientCredentials(Options options)
    : options_(std::move(options)), token_endpoint_(options_.token_url), resource_(options_.resource),
      scope_(options_.scope) {}

ClientCredentials::~ClientCredentials() {
    if (fetcher_) fetcher_->stop();
}

unsigned ClientCredentials::tokens_fetched() const {
    std::lock_guard lock(mutex_);
    return fetched_;
}

std::string ClientCredentials::current() {
    std::lock_guard lock(mutex_);
    // Not found where it might be, and the server has not said where: its
    // requests go without a token for a while rather than each looking again.
    if (token_.empty() && !challenged_ && undiscovered_since_ && Clock::now() - *undiscovered_since_ < kLookAgainAfter)
        return token_;
    if (token_.empty() || Clock::now() >= renew_at_) fetch();
    return token_;
}

bool ClientCredentials::refused(const std::string& token, const BearerChallenge& challenge) {
    std::lock_guard lock(mutex_);
    challenged_ = true;
    // What the challenge teaches: where the metadata is, what scope it wants.
    bool learned = false;
    if (!challenge.resource_metadata.empty() && challenge.resource_metadata != metadata_url_) {
        // Only the upstream's own origin may say where its metadata is: the
        // host would otherwise fetch what any URL a server names says.
        const UrlParts named = split_or_empty(challenge.resource_metadata);
        if (options_.token_url.empty() && named.origin == split(options_.upstream_url).origin) {
            metadata_url_ = challenge.resource_metadata;
            token_endpoint_.clear(); // found anew from it
            learned = true;
        } else if (options_.token_url.empty()) {
            spdlog::warn("upstream '{}' names its resource metadata at another origin ({}); only its own origin is "
                         "asked",
                         options_.family, shown_text(named.origin));
        }
    }
    if (!challenge.scope.empty()) {
        const std::string wanted = joined_scope(scope_, challenge.scope);
        // A server that names ever more scopes does not grow what is asked without end.
        if (wanted != scope_ && wanted.size() <= kMaxScopeBytes) {
            scope_ = wanted;
            learned = true;
        }
    }
    if (token.empty()) return true;              // it went without: now with what the server said
    if (token != token_) return !token_.empty(); // another request has a new one already
    // Wanting more scope, it said nothing new: the token stays, and is not asked for again.
    if (challenge.error == "insufficient_scope" && !learned) return false;
    token_.clear();
    const bool young = Clock::now() - issued_at_ < kYoungToken;
    if (young && !learned)
        spdlog::warn("upstream '{}' refused the token its authorization server has just issued; check the "
                     "client's scope and the resource it is for",
                     options_.family);
    return learned || !young;
}

auth::FetchResult ClientCredentials::get(const std::string& url) {
    auto promise = std::make_shared<std::promise<auth::FetchResult>>();
    auto answer = promise->get_future();
    fetcher_->get(url, [promise](auth::FetchResult r) { promise->set_value(std::move(r)); });
    if (answer.wait_for(options_.timeout + std::chrono::seconds(1)) != std::future_status::ready)
        return auth::FetchResult{0, "", "no answer within " + std::to_string(options_.timeout.count()) + " ms"};
    return answer.get();
}

auth::FetchResult ClientCredentials::post(const std::string& url, const std::string& body) {
    auto promise = std::make_shared<std::promise<auth::FetchResult>>();
    auto answer = promise->get_future();
    // RFC 6749 §2.3.1: both halves of the credentials are form-encoded first.
    const std::string credentials =
        auth::form_escape(options_.client_id) + ":" + auth::form_escape(options_.client_secret);
    fetcher_->post_form(url, body, credentials, [promise](auth::FetchResult r) { promise->set_value(std::move(r)); });
    if (answer.wait_for(options_.timeout + std::chrono::seconds(1)) != std::future_status::ready)
        return auth::FetchResult{0, "", "no answer within " + std::to_string(options_.timeout.count()) + " ms"};
    return answer.get();
}

// A list is the operator's whole choice: with one, even a server on the
// upstream's own origin is not trusted unless listed (an upstream sharing its
// origin with other software need not be trusted with what that one serves).
bool ClientCredentials::trusted_issuer(const std::string& issuer, const std::string& upstream_origin) const {
    if (options_.authorization_servers.empty()) return split_or_empty(issuer).origin == upstream_origin;
    const std::string wanted = without_trailing_slash(issuer);
    return std::any_of(options_.authorization_servers.begin(), options_.authorization_servers.end(),
                       [&](const std::string& listed) { return without_trailing_slash(listed) == wanted; });
}

// The token endpoint as an MCP client finds it (2025-11-25 authorization):
// the resource's metadata names its authorization server, whose metadata
// names the endpoint.
std::string ClientCredentials::discover() {
    const UrlParts resource = split(options_.upstream_url);
    std::vector<std::string> tried;
    Json metadata;
    // Where a 401's WWW-Authenticate said (RFC 9728 §5.1), then the well-known addresses.
    std::vector<std::string> metadata_at;
    if (!metadata_url_.empty()) metadata_at.push_back(metadata_url_);
    metadata_at.push_back(resource.origin + "/.well-known/oauth-protected-resource" + resource.path);
    metadata_at.push_back(resource.origin + "/.well-known/oauth-protected-resource");
    for (const std::string& url : metadata_at) {
        if (!tried.empty() && url == tried.back()) continue;
        tried.push_back(url);
        const auto r = get(url);
        if (!r.ok()) continue;
        metadata = Json::parse(r.body, nullptr, false);
        if (metadata.is_object()) break;
    }
    if (!metadata.is_object()) {
        std::string where;
        for (std::size_t i = 0; i < tried.size(); ++i)
            where += (i == 0 ? "" : i + 1 == tried.size() ? " or " : ", ") + tried[i];
        throw std::runtime_error("its protected resource metadata was not found at " + where +
                                 (challenged_ ? "" : ", and it has not said where in a WWW-Authenticate") +
                                 " (set oauth.token_url to name the token endpoint)");
    }
    const auto servers = metadata.find("authorization_servers");
    if (servers == metadata.end() || !servers->is_array() || servers->empty() || !(*servers)[0].is_string())
        throw std::runtime_error("its protected resource metadata names no authorization_servers");
    // RFC 9728 §3.3: metadata for another resource is not this upstream's.
    if (auto named = metadata.find("resource"); named != metadata.end() && named->is_string()) {
        if (without_trailing_slash(named->get<std::string>()) != without_trailing_slash(options_.upstream_url))
            throw std::runtime_error("its protected resource metadata is for " + shown_text(*named) + ", not for " +
                                     options_.upstream_url);
        if (resource_.empty()) resource_ = named->get<std::string>();
    }

    // The client secret goes only where the operator lets it: one listed in
    // oauth.authorization_servers, or without a list one on the upstream's own origin.
    std::string issuer;
    for (const auto& server : *servers)
        if (server.is_string() && trusted_issuer(server.get<std::string>(), resource.origin)) {
            issuer = server.get<std::string>();
            break;
        }
    if (issuer.empty())
        throw std::runtime_error(
            "its protected resource metadata names the authorization server " + shown_text((*servers)[0]) +
            (options_.authorization_servers.empty()
                 ? ", not on its own origin; the host sends its client secret to no other unless listed (list that "
                   "server in oauth.authorization_servers, or set oauth.token_url)"
                 : ", not among oauth.authorization_servers; with that list the host sends its client secret to no "
                   "other, not even one on the upstream's own origin (list that server there, or set "
                   "oauth.token_url)"));
    const UrlParts as = split(issuer);
    std::vector<std::string> candidates;
    if (as.path.empty()) {
        candidates = {as.origin + "/.well-known/oauth-authorization-server",
                      as.origin + "/.well-known/openid-configuration"};
    } else {
        candidates = {as.origin + "/.well-known/oauth-authorization-server" + as.path,
                      as.origin + "/.well-known/openid-configuration" + as.path,
                      as.origin + as.path + "/.well-known/openid-configuration"};
    }
    for (const auto& url : candidates) {
        const auto r = get(url);
        if (!r.ok()) continue;
        const Json server = Json::parse(r.body, nullptr, false);
        if (!server.is_object()) continue;
        // RFC 8414 §3.3: the metadata is the issuer's only if it says so.
        if (auto named = server.find("issuer");
            named != server.end() && (!named->is_string() || without_trailing_slash(named->get<std::string>()) !=
                                                                 without_trailing_slash(issuer)))
            throw std::runtime_error("the metadata at " + url + " is for the issuer " + shown_text(*named) +
                                     ", not for " + shown_text(issuer));
        const auto endpoint = server.find("token_endpoint");
        if (endpoint == server.end() || !endpoint->is_string() || endpoint->get_ref<const std::string&>().empty())
            throw std::runtime_error("its authorization server " + shown_text(issuer) + " names no token_endpoint at " +
                                     url);
        if (auto grants = server.find("grant_types_supported"); grants != server.end() && grants->is_array()) {
            bool offered = false;
            for (const auto& g : *grants)
                offered = offered || g == "client_credentials";
            if (!offered)
                throw std::runtime_error("its authorization server " + shown_text(issuer) +
                                         " does not offer the client_credentials grant (grant_types_supported: " +
                                         shown_text(*grants) + ")");
        }
        return endpoint->get<std::string>();
    }
    throw std::runtime_error("the metadata of its authorization server " + shown_text(issuer) + " was not found at " +
                             candidates.front());
}

void ClientCredentials::fetch() {
    const std::string why = "the host could not get its access token for upstream '" + options_.family + "': ";
    if (!fetcher_) {
        try {
            fetcher_ = auth::make_http_fetcher(options_.timeout, options_.tls);
        } catch (const std::exception& e) {
            throw std::runtime_error(why + e.what()); // a CA file it cannot read
        }
    }
    try {
        if (token_endpoint_.empty()) token_endpoint_ = discover();
    } catch (const std::exception& e) {
        // Not found where it might be, and the server not asked yet: the
        // request goes without a token, and a 401's WWW-Authenticate may say
        // where the metadata is (current() gives the empty token).
        if (!challenged_) {
            spdlog::info("upstream '{}': {}; asking it without a token, so it can say where", options_.family,
                         e.what());
            undiscovered_since_ = Clock::now();
            return;
        }
        throw std::runtime_error(why + e.what());
    }
    std::string body = "grant_type=client_credentials";
    if (!scope_.empty()) body += "&scope=" + auth::form_escape(scope_);
    body += "&resource=" + auth::form_escape(resource_.empty() ? options_.upstream_url : resource_);
    const auto r = post(token_endpoint_, body);
    const Json answer = r.error.empty() ? Json::parse(r.body, nullptr, false) : Json();
    if (!r.ok()) {
        // RFC 6749 §5.2: error and error_description say why.
        std::string detail = r.failure();
        if (answer.is_object() && answer.contains("error"))
            detail +=
                ": " + shown_text(answer["error"]) +
                (answer.contains("error_description") ? " (" + shown_text(answer["error_description"]) + ")" : "");
        throw std::runtime_error(why + "its token endpoint " + token_endpoint_ + " answered " + detail);
    }
    const auto refuse = [&](const std::string& what) {
        return std::runtime_error(why + "the answer of its token endpoint " + token_endpoint_ + " " + what);
    };
    if (!answer.is_object()) throw refuse("is not a JSON object");
    const auto token = answer.find("access_token");
    if (token == answer.end() || !token->is_string() || token->get_ref<const std::string&>().empty())
        throw refuse("holds no access_token");
    const std::string& text = token->get_ref<const std::string&>();
    if (text.size() > kMaxTokenBytes || !header_safe(text))
        throw refuse("holds an access_token that is over " + std::to_string(kMaxTokenBytes) +
                     " bytes or holds characters a header may not");
    if (auto type = answer.find("token_type"); type != answer.end())
        if (!type->is_string() || !protocol::equals_ignoring_ascii_case(type->get_ref<const std::string&>(), "bearer"))
            throw refuse("gives a token of type " + shown_text(*type) + ", not a Bearer token");
    Clock::duration lifetime = std::chrono::hours(24 * 365); // no expires_in: kept until refused
    if (auto expires = answer.find("expires_in"); expires != answer.end() && expires->is_number())
        if (const double seconds = expires->get<double>(); seconds >= 1)
            lifetime = std::chrono::seconds(static_cast<std::int64_t>(std::min(seconds, 10.0 * 365 * 86400)));
    token_ = text;
    issued_at_ = Clock::now();
    renew_at_ = issued_at_ + lifetime - std::min<Clock::duration>(kRenewAhead, lifetime / 10);
    ++fetched_;
    spdlog::info("upstream '{}': an access token from {}, for {} s", options_.family, token_endpoint_,
                 std::chrono::duration_cast<std::chrono::seconds>(lifetime).count());
}

} // namespace gatehouse::upstream
