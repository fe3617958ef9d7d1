#include "auth/bearer_token.hpp"
#include "auth/issuer_keys.hpp"
#include "auth/json_web_key.hpp"
#include "auth/token_claims.hpp"
#include "auth/token_introspection.hpp"
#include "config/config_error.hpp"
#include "config/config_loader.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

using namespace gatehouse;
using Kind = auth::TokenVerdict::Kind;

TEST_CASE("the bearer token comes from the Authorization header only", "[auth]") {
    using Found = auth::BearerToken::Found;
    CHECK(auth::find_bearer_token(std::nullopt, 0, "/mcp").found == Found::none);
    auto ok = auth::find_bearer_token(std::string_view("Bearer abc.DEF-_~+/="), 1, "/mcp");
    CHECK(ok.found == Found::token);
    CHECK(ok.token == "abc.DEF-_~+/=");
    CHECK(auth::find_bearer_token(std::string_view("bearer  xyz "), 1, "/mcp").token == "xyz");
    CHECK(auth::find_bearer_token(std::string_view("Basic YTpi"), 1, "/mcp").found == Found::malformed);
    CHECK(auth::find_bearer_token(std::string_view("Bearer "), 1, "/mcp").found == Found::malformed);
    CHECK(auth::find_bearer_token(std::string_view("Bearer a b"), 1, "/mcp").found == Found::malformed);
    CHECK(auth::find_bearer_token(std::string_view("Bearer a=b"), 1, "/mcp").found == Found::malformed);
    CHECK(auth::find_bearer_token(std::string_view("Bearer a"), 2, "/mcp").found == Found::malformed);
    CHECK(auth::find_bearer_token(std::nullopt, 0, "/mcp?x=1&access_token=t").found == Found::malformed);
    CHECK(auth::find_bearer_token(std::nullopt, 0, "/mcp?my_access_token=t").found == Found::none);
}

TEST_CASE("claims: issuer, audience, expiry with skew, subject, scopes", "[auth]") {
    const auto now = std::chrono::system_clock::from_time_t(1'800'000'000);
    auth::ClaimRules rules;
    rules.audiences = {"https://mcp.example/mcp", "urn:extra"};
    rules.issuers = {"https://as.example"};
    rules.skew = std::chrono::seconds(30);
    nlohmann::json good = {{"iss", "https://as.example"},
                           {"aud", "https://mcp.example/mcp"},
                           {"sub", "alice"},
                           {"exp", 1'800'000'100},
                           {"client_id", "desk"},
                           {"scope", "a  b"}};
    auto v = auth::check_claims(good, rules, now);
    REQUIRE(v.kind == Kind::accepted);
    CHECK(v.principal.subject == "alice");
    CHECK(v.principal.client_id == "desk");
    CHECK(v.principal.scopes == std::vector<std::string>{"a", "b"});

    auto with = [&](const char* key, nlohmann::json value) {
        auto c = good;
        if (value.is_null())
            c.erase(key);
        else
            c[key] = std::move(value);
        return auth::check_claims(c, rules, now);
    };
    CHECK(with("aud", nlohmann::json::array({"other", "urn:extra"})).kind == Kind::accepted);
    CHECK(with("aud", "https://mcp.example/other").kind == Kind::rejected);
    CHECK(with("aud", nullptr).kind == Kind::rejected);
    CHECK(with("iss", "https://evil.example").kind == Kind::rejected);
    CHECK(with("exp", 1'800'000'000 - 29).kind == Kind::accepted);
    CHECK(with("exp", 1'800'000'000 - 30).kind == Kind::rejected);
    CHECK(with("exp", nullptr).kind == Kind::rejected);
    CHECK(with("exp", "soon").kind == Kind::rejected);
    CHECK(with("nbf", 1'800'000'000 + 30).kind == Kind::accepted);
    CHECK(with("nbf", 1'800'000'000 + 31).kind == Kind::rejected);
    CHECK(with("sub", nullptr).kind == Kind::rejected);
    CHECK(with("sub", 7).kind == Kind::rejected);
    auto scp = good;
    scp.erase("scope");
    scp["scp"] = {"x", 3, "y"};
    CHECK(auth::check_claims(scp, rules, now).principal.scopes == std::vector<std::string>{"x", "y"});
    rules.prefix_subject_with_issuer = true;
    CHECK(auth::check_claims(good, rules, now).principal.subject == "https://as.example alice");
}

TEST_CASE("a principal's owner key is its kind, issuer and subject, and keys never meet", "[auth]") {
    const auto now = std::chrono::system_clock::from_time_t(1'800'000'000);
    auth::ClaimRules rules;
    rules.audiences = {"https://mcp.example/mcp"};
    rules.issuers = {"https://as.example", "https://other.example"};
    nlohmann::json claims = {
        {"iss", "https://as.example"}, {"aud", "https://mcp.example/mcp"}, {"sub", "alice"}, {"exp", 1'800'000'100}};
    const auto from_as = auth::check_claims(claims, rules, now);
    REQUIRE(from_as.kind == Kind::accepted);
    CHECK(from_as.principal.issuer == "https://as.example");
    claims["iss"] = "https://other.example";
    const auto from_other = auth::check_claims(claims, rules, now);
    REQUIRE(from_other.kind == Kind::accepted);

    const auth::Principal local{.subject = "alice", .kind = "local"};
    CHECK(local.owner_key() == "alice"); // the form every store keyed the local user by before
    CHECK(from_as.principal.owner_key() != local.owner_key());
    CHECK(from_as.principal.owner_key() != from_other.principal.owner_key());
    CHECK(from_as.principal.to_json()["owner"] == from_as.principal.owner_key());
    CHECK(local.to_json()["owner"] == "alice");

    // Parts that try to imitate the separators stay apart.
    const auth::Principal api_key{.subject = "alice", .kind = "token", .client_id = "ci"};
    const auth::Principal crafted{"x:alice", "token", {}, {}, ""};
    const auth::Principal split{"alice", "token", {}, {}, "x"};
    const auth::Principal local_lookalike{.subject = "token::alice", .kind = "local"};
    const auth::Principal local_escape{.subject = "token%3A%3Aalice", .kind = "local"};
    const std::vector<std::string> keys = {
        local.owner_key(),           api_key.owner_key(),      crafted.owner_key(),          split.owner_key(),
        local_lookalike.owner_key(), local_escape.owner_key(), from_as.principal.owner_key()};
    for (std::size_t i = 0; i < keys.size(); ++i)
        for (std::size_t j = i + 1; j < keys.size(); ++j) {
            INFO(keys[i] << " vs " << keys[j]);
            CHECK(keys[i] != keys[j]);
        }
    CHECK(local_lookalike.owner_key().find(':') == std::string::npos);

    // A subject with a NUL or another control byte keeps its whole length in
    // the key, as text every store can carry: a store that reads a text up to
    // its first NUL (libpq's parameters) must not see "alice\0x" as "alice".
    claims["iss"] = "https://as.example";
    claims["sub"] = std::string("alice\0x", 7);
    const auto with_nul = auth::check_claims(claims, rules, now);
    REQUIRE(with_nul.kind == Kind::accepted);
    const std::string key = with_nul.principal.owner_key();
    CHECK(key.find('\0') == std::string::npos);
    CHECK(key != from_as.principal.owner_key());
    CHECK(key.substr(0, key.find("%00")) == from_as.principal.owner_key());
    const auth::Principal newline{"alice\nbob", "local", {}, {}, ""};
    CHECK(newline.owner_key() == "alice%0Abob");
}

TEST_CASE("JWKs that cannot verify what they claim are refused", "[auth]") {
    CHECK_THROWS_WITH(auth::JsonWebKey::parse({{"kty", "oct"}, {"k", "AAAA"}}),
                      Catch::Contains("unsupported key type"));
    CHECK_THROWS_WITH(auth::JsonWebKey::parse({{"kty", "RSA"}, {"n", "AQAB"}, {"e", "AQAB"}}),
                      Catch::Contains("shorter than 2048"));
    CHECK_THROWS_WITH(auth::JsonWebKey::parse({{"kty", "EC"}, {"crv", "P-384"}, {"x", "AA"}, {"y", "AA"}}),
                      Catch::Contains("P-256"));
    CHECK_THROWS_WITH(auth::JsonWebKey::parse({{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", "!!"}}),
                      Catch::Contains("base64url"));
    CHECK_THROWS(auth::JsonWebKey::parse("not an object"));
    // An Ed25519 key (RFC 8037 §A.2) with a mismatching alg.
    const nlohmann::json ed = {
        {"kty", "OKP"}, {"crv", "Ed25519"}, {"x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}};
    CHECK(auth::JsonWebKey::parse(ed).algorithm() == "EdDSA");
    auto wrong = ed;
    wrong["alg"] = "RS256";
    CHECK_THROWS_WITH(auth::JsonWebKey::parse(wrong), Catch::Contains("alg"));
    auto encryption = ed;
    encryption["use"] = "enc";
    CHECK_THROWS(auth::JsonWebKey::parse(encryption));
}

TEST_CASE("base64url and the RFC 8414 metadata location", "[auth]") {
    std::string out;
    CHECK(auth::base64url_decode("aGk", out));
    CHECK(out == "hi");
    CHECK_FALSE(auth::base64url_decode("aGk=", out));
    CHECK_FALSE(auth::base64url_decode("a", out));
    CHECK(auth::oauth_metadata_url("https://as.example") ==
          "https://as.example/.well-known/oauth-authorization-server");
    CHECK(auth::oauth_metadata_url("https://as.example/tenant1") ==
          "https://as.example/.well-known/oauth-authorization-server/tenant1");
    CHECK(auth::openid_metadata_url("https://as.example/tenant1/") ==
          "https://as.example/tenant1/.well-known/openid-configuration");
}

TEST_CASE("the auth section: modes, what each needs, file:line on mistakes", "[auth][config]") {
    auto load = [](const std::string& yaml) { return config::load_config_text(yaml, "auth.yaml", "/tmp"); };
    CHECK_FALSE(load("transports: [http]\n").auth.configured);
    CHECK_FALSE(load("transports: [http]\n").auth.verifies_tokens());
    const auto jwt = load("auth:\n  mode: jwt\n  issuers: [https://as.example]\n  clock_skew_s: 5\n");
    CHECK(jwt.auth.mode == "jwt");
    CHECK(jwt.auth.clock_skew_s == 5);
    CHECK_THROWS_WITH(load("auth:\n  mode: jwt\n"), Catch::Contains("auth.yaml:2") && Catch::Contains("issuers"));
    CHECK_THROWS_WITH(load("auth:\n  mode: magic\n"), Catch::Contains("auth.mode must be one of"));
    CHECK_THROWS_WITH(load("auth:\n  mode: none\n  tokens: yes\n"), Catch::Contains("unknown key 'tokens'"));
    CHECK_THROWS_WITH(load("auth:\n  mode: jwt\n  issuers: [as.example]\n"), Catch::Contains("http:// or https://"));
    CHECK_THROWS_WITH(load("auth:\n  mode: introspection\n  introspection_endpoint: https://as/i\n"),
                      Catch::Contains("auth.client_id"));
    const std::string hash(64, 'a');
    const auto keys = load("auth:\n  mode: api_keys\n  api_keys:\n    - {sha256: " + std::string(64, 'A') +
                           ", subject: ci, scopes: [x]}\n");
    CHECK(keys.auth.api_keys.at(0).sha256_hex == hash);
    CHECK_THROWS_WITH(load("auth:\n  mode: api_keys\n  api_keys:\n    - {sha256: " + hash +
                           ", subject: a}\n    - {sha256: " + hash + ", subject: b}\n"),
                      Catch::Contains("listed twice"));
}

TEST_CASE("claims naming a member twice are not read", "[auth]") {
    CHECK(auth::parse_claims_object(R"({"sub":"alice","aud":["a","b"]})")["sub"] == "alice");
    CHECK(auth::parse_claims_object(R"({"sub":"alice","sub":"admin"})").is_discarded());
    CHECK(auth::parse_claims_object(R"({"cnf":{"jkt":"a","jkt":"b"}})").is_discarded());
    CHECK(auth::parse_claims_object(R"({"a":{"x":1},"b":{"x":1}})").is_object());
    CHECK(auth::parse_claims_object(R"([{"sub":"a"}])").is_discarded());
    CHECK(auth::parse_claims_object("not json").is_discarded());
}

TEST_CASE("each issuer's keys come from its own source, a shared one is refused at load", "[auth][config]") {
    auto load = [](const std::string& yaml) { return config::load_config_text(yaml, "auth.yaml", "/tmp"); };
    const auto own = load("auth:\n  mode: jwt\n  issuers:\n    - {issuer: https://a.example, jwks_uri: "
                          "https://a.example/keys}\n    - https://b.example\n");
    CHECK(own.auth.issuers == std::vector<std::string>{"https://a.example", "https://b.example"});
    CHECK(own.auth.issuer_jwks_uris ==
          std::map<std::string, std::string>{{"https://a.example", "https://a.example/keys"}});
    const auto single = load("auth:\n  mode: jwt\n  issuers: [https://a.example]\n  jwks_uri: https://a.example/k\n");
    CHECK(single.auth.issuer_jwks_uris.at("https://a.example") == "https://a.example/k");
    CHECK_THROWS_WITH(load("auth:\n  mode: jwt\n  issuers: [https://a.example, https://b.example]\n"
                           "  jwks_uri: https://keys.example/jwks\n"),
                      Catch::Contains("auth.yaml:4") && Catch::Contains("names the keys of one issuer"));
    CHECK_THROWS_WITH(load("auth:\n  mode: jwt\n  issuers:\n    - {issuer: https://a.example, jwks_uri: "
                           "https://keys.example/jwks}\n    - {issuer: https://b.example, jwks_uri: "
                           "https://keys.example/jwks}\n"),
                      Catch::Contains("both take their keys from https://keys.example/jwks"));
    CHECK_THROWS_WITH(load("auth:\n  mode: jwt\n  issuers: [https://a.example, https://a.example]\n"),
                      Catch::Contains("listed twice"));
}

namespace {

// Answers each GET from a table at once, on the caller's thread; records what was asked.
class ScriptedFetcher final : public auth::HttpFetcher {
public:
    std::map<std::string, std::string> bodies;
    std::vector<std::string> asked;

    void stop() override {}
    void get(const std::string& url, Done done) override {
        asked.push_back(url);
        auth::FetchResult r;
        if (auto it = bodies.find(url); it != bodies.end()) {
            r.status = 200;
            r.body = it->second;
        } else {
            r.status = 404;
        }
        done(r);
    }
    void post_form(const std::string&, std::string, std::string, Done done) override { done({0, "", "not here"}); }
    void post(std::function<void()> work) override { work(); }
    void post_after(std::chrono::milliseconds, std::function<void()>) override {}
};

} // namespace

TEST_CASE("an https issuer's keys are read over https only, whatever its metadata names", "[auth]") {
    const auto keys_read = [](const std::string& jwks_uri) {
        ScriptedFetcher fetcher;
        fetcher.bodies["https://as.example/.well-known/oauth-authorization-server"] =
            nlohmann::json{{"issuer", "https://as.example"}, {"jwks_uri", jwks_uri}}.dump();
        fetcher.bodies[jwks_uri] = R"({"keys":[]})";
        auth::KeySources sources;
        auth::IssuerKeys keys("https://as.example", "", {}, fetcher, sources);
        std::optional<bool> read_ok;
        keys.refresh_for_unknown_key([&](bool ok) { read_ok = ok; });
        REQUIRE(read_ok);
        const bool fetched = std::find(fetcher.asked.begin(), fetcher.asked.end(), jwks_uri) != fetcher.asked.end();
        return std::make_pair(*read_ok, fetched);
    };
    CHECK(keys_read("https://as.example/jwks") == std::make_pair(true, true));
    // Over plain HTTP anyone on the path could hand over keys of their own.
    CHECK(keys_read("http://as.example/jwks") == std::make_pair(false, false));
}

namespace {

// An authorization server that knows no token: every introspection answers inactive.
class InactiveEverywhere final : public auth::HttpFetcher {
public:
    std::size_t asked = 0;
    void stop() override {}
    void get(const std::string&, Done done) override { done({404, "", ""}); }
    void post_form(const std::string&, std::string, std::string, Done done) override {
        ++asked;
        done({200, R"({"active":false})", ""});
    }
    void post(std::function<void()> work) override { work(); }
    void post_after(std::chrono::milliseconds, std::function<void()>) override {}
};

} // namespace

TEST_CASE("introspection calls are counted per IPv4 address or IPv6 /64, and bounded for all addresses together",
          "[auth]") {
    CHECK(auth::caller_group("192.0.2.7") == "192.0.2.7");
    CHECK(auth::caller_group("::ffff:192.0.2.7") == "192.0.2.7");
    CHECK(auth::caller_group("2001:db8:1:2:aaaa:bbbb:cccc:1") == "2001:db8:1:2::/64");
    CHECK(auth::caller_group("2001:db8:1:2::9") == auth::caller_group("2001:db8:1:2:ffff::1"));
    CHECK(auth::caller_group("2001:db8:1:3::9") != auth::caller_group("2001:db8:1:2::9"));
    CHECK(auth::caller_group("not an address") == "not an address");

    InactiveEverywhere server;
    auth::TokenIntrospection::Endpoint endpoint;
    endpoint.url = "https://as.example/introspect";
    endpoint.client_id = "gatehouse";
    endpoint.client_secret = "secret";
    endpoint.calls_per_address_per_minute = 3;
    auth::TokenIntrospection introspection(endpoint, auth::ClaimRules{}, server);
    std::size_t token = 0;
    const auto ask = [&](const std::string& address) {
        std::optional<auth::TokenVerdict> verdict;
        introspection.verify("opaque-" + std::to_string(token++), address, [&](auth::TokenVerdict v) { verdict = v; });
        REQUIRE(verdict);
        return verdict->kind;
    };
    // One client walking through the addresses of its /64 gets no fresh count.
    for (int i = 1; i <= 3; ++i)
        CHECK(ask("2001:db8:1:2::" + std::to_string(i)) == Kind::rejected);
    CHECK(ask("2001:db8:1:2::4") == Kind::throttled);
    CHECK(ask("2001:db8:1:3::1") == Kind::rejected);
    CHECK(server.asked == 4);

    // Many addresses at once: past 10 000 calls a minute for all of them
    // (before, a full table started over and every address counted anew, so
    // nothing bounded the calls), an address that asked five times or more
    // waits, while one that asks seldom is still served.
    InactiveEverywhere busy_server;
    endpoint.calls_per_address_per_minute = 60;
    auth::TokenIntrospection busy(endpoint, auth::ClaimRules{}, busy_server);
    const auto ask_busy = [&](const std::string& address) {
        std::optional<auth::TokenVerdict> verdict;
        busy.verify("opaque-" + std::to_string(token++), address, [&](auth::TokenVerdict v) { verdict = v; });
        REQUIRE(verdict);
        return verdict->kind;
    };
    const auto address = [](int i) { return "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256); };
    for (int i = 0; i < 1667; ++i)
        for (int call = 0; call < 6; ++call)
            ask_busy(address(i));
    // 1666 addresses x 6, then the last one's fifth call is still its fair share.
    CHECK(busy_server.asked == 10'001);
    CHECK(ask_busy(address(0)) == Kind::throttled);
    CHECK(ask_busy("192.0.2.1") == Kind::rejected);
    CHECK(busy_server.asked == 10'002);
}

TEST_CASE("signing keys not read again within jwks_max_stale_s are no longer trusted", "[auth]") {
    ScriptedFetcher fetcher; // knows no address: every re-read fails
    auth::KeySources sources;
    auth::IssuerKeys::Timing timing;
    timing.max_stale = std::chrono::seconds(1);
    auth::IssuerKeys keys("https://as.example", "https://as.example/jwks", timing, fetcher, sources);
    const nlohmann::json ed25519 = {
        {"kty", "OKP"}, {"crv", "Ed25519"}, {"kid", "k1"}, {"x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}};
    REQUIRE(keys.replace_keys({{"keys", {ed25519}}}) == 1);
    CHECK(keys.find("k1", "EdDSA"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    // The issuer may have withdrawn it meanwhile; the host could not read its set to know.
    CHECK_FALSE(keys.find("k1", "EdDSA"));
    std::optional<bool> read_ok;
    keys.refresh_for_unknown_key([&](bool ok) { read_ok = ok; });
    CHECK(read_ok == std::optional<bool>(false));
    CHECK_FALSE(keys.find("k1", "EdDSA"));
    // Read again, it is trusted again.
    REQUIRE(keys.replace_keys({{"keys", {ed25519}}}) == 1);
    CHECK(keys.find("k1", "EdDSA"));
}
