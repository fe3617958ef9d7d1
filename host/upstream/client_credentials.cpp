#include "upstream/client_credentials.hpp"

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
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (text.size() > 200) text = text.substr(0, 200) + "…";
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    return text;
}

bool header_safe(const std::string& token) {
    for (unsigned char c : token)
        if (c <= 0x20 || c >= 0x7f) return false;
    return true;
}

bool iequals(const std::string& a, const char* b) {
    std::size_t i = 0;
    for (; i < a.size() && b[i]; ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return i == a.size() && !b[i];
}

} // namespace

ClientCredentials::ClientCredentials(Options options)
    : options_(std::move(options)), token_endpoint_(options_.token_url), resource_(options_.resource) {}

ClientCredentials::~ClientCredentials() {
    if (fetcher_) fetcher_->stop();
}

unsigned ClientCredentials::tokens_fetched() const {
    std::lock_guard lock(mutex_);
    return fetched_;
}

std::string ClientCredentials::current() {
    std::lock_guard lock(mutex_);
    if (token_.empty() || Clock::now() >= renew_at_) fetch();
    return token_;
}

bool ClientCredentials::refused(const std::string& token) {
    std::lock_guard lock(mutex_);
    if (token != token_) return !token_.empty(); // another request has a new one already
    token_.clear();
    const bool young = Clock::now() - issued_at_ < kYoungToken;
    if (young)
        spdlog::warn("upstream '{}' refused the token its authorization server has just issued; check the "
                     "client's scope and the resource it is for",
                     options_.family);
    return !young;
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

// The token endpoint as an MCP client finds it (2025-11-25 authorization):
// the resource's metadata names its authorization server, whose metadata
// names the endpoint.
std::string ClientCredentials::discover() {
    const UrlParts resource = split(options_.upstream_url);
    std::vector<std::string> tried;
    Json metadata;
    for (const std::string& url : {resource.origin + "/.well-known/oauth-protected-resource" + resource.path,
                                   resource.origin + "/.well-known/oauth-protected-resource"}) {
        if (!tried.empty() && url == tried.back()) continue;
        tried.push_back(url);
        const auto r = get(url);
        if (!r.ok()) continue;
        metadata = Json::parse(r.body, nullptr, false);
        if (metadata.is_object()) break;
    }
    if (!metadata.is_object())
        throw std::runtime_error("its protected resource metadata was not found at " + tried.front() +
                                 (tried.size() > 1 ? " or " + tried.back() : "") +
                                 " (set oauth.token_url to name the token endpoint)");
    const auto servers = metadata.find("authorization_servers");
    if (servers == metadata.end() || !servers->is_array() || servers->empty() || !(*servers)[0].is_string())
        throw std::runtime_error("its protected resource metadata names no authorization_servers");
    if (resource_.empty())
        if (auto named = metadata.find("resource"); named != metadata.end() && named->is_string())
            resource_ = named->get<std::string>();

    const std::string issuer = (*servers)[0].get<std::string>();
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
    if (!fetcher_) fetcher_ = auth::make_http_fetcher(options_.timeout);
    const std::string why = "the host could not get its access token for upstream '" + options_.family + "': ";
    try {
        if (token_endpoint_.empty()) token_endpoint_ = discover();
    } catch (const std::exception& e) {
        throw std::runtime_error(why + e.what());
    }
    std::string body = "grant_type=client_credentials";
    if (!options_.scope.empty()) body += "&scope=" + auth::form_escape(options_.scope);
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
        if (!type->is_string() || !iequals(type->get<std::string>(), "bearer"))
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
