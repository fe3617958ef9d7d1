#include "mrtr/input_requests.hpp"
#include "mrtr/request_state_sealer.hpp"

#include "license/base64.hpp"

#include <catch2/catch.hpp>

using gatehouse::mrtr::RequestStateSealer;
using gatehouse::mrtr::StateBinding;
using Json = nlohmann::json;

namespace {

std::string key_of(char fill) {
    return std::string(RequestStateSealer::kKeyBytes, fill);
}

StateBinding bound() {
    return {"local:alice", "tools/call", "session_clear",
            RequestStateSealer::fingerprint(Json{{"session", "h1"}, {"topic", "t"}})};
}

RequestStateSealer sealer(std::vector<std::string> keys = {key_of('a')}, std::string server = "gatehouse") {
    return RequestStateSealer(std::move(keys), std::move(server), std::chrono::minutes(10));
}

} // namespace

TEST_CASE("a sealed state opens for the request it was sealed for, and hides what it holds", "[request_state]") {
    const auto s = sealer();
    const std::string token = s.seal(bound(), "folders=a,b");
    CHECK(token.find("folders") == std::string::npos);
    CHECK(s.open(token, bound()) == std::optional<std::string>("folders=a,b"));
    CHECK(s.seal(bound(), "folders=a,b") != token); // a fresh nonce every time
    CHECK(s.open(s.seal(bound(), ""), bound()) == std::optional<std::string>(""));
}

TEST_CASE("a state that is not UTF-8 text is refused when sealed, never mangled", "[request_state]") {
    const auto s = sealer();
    CHECK_THROWS_AS(s.seal(bound(), std::string("\xff\xfe state", 8)), std::invalid_argument);
    const std::string text = "caf\xc3\xa9 \xe2\x9c\x93"; // UTF-8 text comes back byte for byte
    CHECK(s.open(s.seal(bound(), text), bound()) == std::optional<std::string>(text));
}

TEST_CASE("a state with one byte changed does not open", "[request_state]") {
    const auto s = sealer();
    const std::string token = s.seal(bound(), "state");
    auto raw = *gatehouse::license::base64_decode(token);
    for (std::size_t at : {std::size_t{0}, std::size_t{3}, std::size_t{10}, raw.size() / 2, raw.size() - 1}) {
        auto changed = raw;
        changed[at] = static_cast<char>(changed[at] ^ 0x01);
        CHECK_FALSE(s.open(gatehouse::license::base64_encode(changed), bound()));
    }
    CHECK_FALSE(s.open(token + "-TAMPERED", bound()));
    CHECK_FALSE(s.open(token.substr(0, token.size() - 4), bound()));
    CHECK_FALSE(s.open("", bound()));
    CHECK_FALSE(s.open(std::string(100000, 'A'), bound()));
}

TEST_CASE("an expired state does not open", "[request_state]") {
    const RequestStateSealer s({key_of('a')}, "gatehouse", std::chrono::seconds(600));
    const auto sealed_at = RequestStateSealer::Clock::now();
    const std::string token = s.seal(bound(), "state", sealed_at);
    CHECK(s.open(token, bound(), sealed_at + std::chrono::seconds(599)));
    CHECK_FALSE(s.open(token, bound(), sealed_at + std::chrono::seconds(601)));
}

TEST_CASE("a state presented on another request does not open", "[request_state]") {
    const auto s = sealer();
    const std::string token = s.seal(bound(), "state");
    SECTION("another principal") {
        auto other = bound();
        other.principal = "local:mallory";
        CHECK_FALSE(s.open(token, other));
    }
    SECTION("another tool") {
        auto other = bound();
        other.target = "memory_delete";
        CHECK_FALSE(s.open(token, other));
    }
    SECTION("another method") {
        auto other = bound();
        other.method = "prompts/get";
        CHECK_FALSE(s.open(token, other));
    }
    SECTION("other arguments") {
        auto other = bound();
        other.arguments_fingerprint = RequestStateSealer::fingerprint(Json{{"session", "h2"}, {"topic", "t"}});
        CHECK_FALSE(s.open(token, other));
    }
}

TEST_CASE("a state sealed by a server of another name does not open, with the same key", "[request_state]") {
    const std::string token = sealer({key_of('a')}, "gatehouse-a").seal(bound(), "state");
    CHECK_FALSE(sealer({key_of('a')}, "gatehouse-b").open(token, bound()));
    CHECK(sealer({key_of('a')}, "gatehouse-a").open(token, bound()));
}

TEST_CASE("keys rotate: the first seals, any opens, a key rotated out no longer opens", "[request_state]") {
    const std::string old_token = sealer({key_of('o')}).seal(bound(), "old");
    const auto rotating = sealer({key_of('n'), key_of('o')});
    CHECK(rotating.open(old_token, bound()) == std::optional<std::string>("old"));
    const std::string new_token = rotating.seal(bound(), "new");
    CHECK(sealer({key_of('n')}).open(new_token, bound()) == std::optional<std::string>("new"));
    CHECK_FALSE(sealer({key_of('n')}).open(old_token, bound())); // 'o' rotated out
    CHECK_FALSE(sealer({key_of('x')}).open(new_token, bound()));
}

TEST_CASE("two sealers with the same key accept each other's state, without a key each process has its own",
          "[request_state]") {
    CHECK(sealer().open(sealer().seal(bound(), "shared"), bound()) == std::optional<std::string>("shared"));
    const RequestStateSealer one({}, "gatehouse", std::chrono::minutes(1));
    const RequestStateSealer two({}, "gatehouse", std::chrono::minutes(1));
    CHECK(one.ephemeral());
    CHECK_FALSE(sealer().ephemeral());
    CHECK(one.open(one.seal(bound(), "x"), bound()));
    CHECK_FALSE(two.open(one.seal(bound(), "x"), bound()));
}

TEST_CASE("the argument fingerprint does not depend on key order", "[request_state]") {
    CHECK(RequestStateSealer::fingerprint(Json::parse(R"({"a":1,"b":[1,2]})")) ==
          RequestStateSealer::fingerprint(Json::parse(R"({"b":[1,2],"a":1})")));
    CHECK(RequestStateSealer::fingerprint(Json::parse(R"({"a":1})")) !=
          RequestStateSealer::fingerprint(Json::parse(R"({"a":2})")));
}

TEST_CASE("configured keys are base64 of exactly 32 bytes", "[request_state]") {
    CHECK(RequestStateSealer::parse_key(gatehouse::license::base64_encode(key_of('k'))) == key_of('k'));
    CHECK_FALSE(RequestStateSealer::parse_key(gatehouse::license::base64_encode(std::string(16, 'k'))));
    CHECK_FALSE(RequestStateSealer::parse_key("not base64!"));
    CHECK_THROWS(RequestStateSealer({std::string(31, 'k')}, "gatehouse", std::chrono::minutes(1)));
    CHECK_THROWS(sealer().seal(bound(), std::string(RequestStateSealer::kMaxStateBytes + 1, 's')));
}

TEST_CASE("a plugin's input_required answer is checked before anything is sent", "[request_state]") {
    using gatehouse::mrtr::parse_input_required;
    const auto asked = parse_input_required(R"({"inputRequests":{"q":{"method":"roots/list"}},"requestState":"s"})");
    CHECK(asked.requests["q"]["params"] == Json::object());
    CHECK(asked.state == "s");
    CHECK_THROWS(parse_input_required("[]"));
    CHECK_THROWS(parse_input_required("{}"));
    CHECK_THROWS(parse_input_required(R"({"inputRequests":{"q":{"method":"tools/call","params":{}}}})"));
    CHECK_THROWS(parse_input_required(R"({"inputRequests":{"q":{"method":"roots/list","params":[]}}})"));
    CHECK_THROWS(parse_input_required(R"({"requestState":7})"));
}

TEST_CASE("what input requests need of the client's capabilities", "[request_state]") {
    using gatehouse::mrtr::missing_capabilities;
    const Json requests = {
        {"form", {{"method", "elicitation/create"}, {"params", {{"message", "m"}}}}},
        {"page", {{"method", "elicitation/create"}, {"params", {{"mode", "url"}, {"url", "https://x"}}}}},
        {"model", {{"method", "sampling/createMessage"}, {"params", Json::object()}}},
        {"roots", {{"method", "roots/list"}, {"params", Json::object()}}}};
    CHECK(missing_capabilities(requests, Json::object()) ==
          Json::parse(R"({"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}})"));
    CHECK(missing_capabilities(requests, Json::parse(R"({"elicitation":{},"sampling":{},"roots":{}})")) ==
          Json::parse(R"({"elicitation":{"url":{}}})"));
    CHECK(missing_capabilities(requests, Json::parse(R"({"elicitation":{"url":{}},"sampling":{},"roots":{}})")) ==
          Json::parse(R"({"elicitation":{"form":{}}})"));
    CHECK(
        missing_capabilities(requests, Json::parse(R"({"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}})"))
            .empty());
}
