#include "protocol/json_rpc.hpp"

#include <catch2/catch.hpp>

using gatehouse::protocol::BoundedParse;
using gatehouse::protocol::parse_bounded;

namespace {

bool too_deep(std::string_view text, std::size_t limit) {
    return parse_bounded(text, limit).outcome == BoundedParse::Outcome::too_deep;
}

} // namespace

TEST_CASE("nesting is counted over arrays and objects alike", "[depth]") {
    CHECK_FALSE(too_deep("{}", 1));
    CHECK(too_deep("{}", 0));
    CHECK_FALSE(too_deep(R"({"a":[{"b":[]}]})", 4));
    CHECK(too_deep(R"({"a":[{"b":[]}]})", 3));
    CHECK_FALSE(too_deep("42", 0));
}

TEST_CASE("siblings do not add up, only depth counts", "[depth]") {
    CHECK_FALSE(too_deep("[[],[],[],[],[]]", 2));
    CHECK_FALSE(too_deep(R"({"a":{},"b":{},"c":{"d":1}})", 2));
}

TEST_CASE("brackets inside strings do not count", "[depth]") {
    CHECK_FALSE(too_deep(R"({"text":"[[[[{{{{"})", 1));
    // An escaped quote does not end the string.
    CHECK_FALSE(too_deep(R"({"text":"a\"[[[[[["})", 1));
    // An escaped backslash does end it before the quote.
    CHECK(too_deep(R"(["a\\",[[]]])", 2));
}

TEST_CASE("a message within the limit is parsed whole, in the one pass", "[depth]") {
    const std::string text = R"({"id":7,"params":{"name":"noop","arguments":{"a":[1,{"b":null}]}}})"; // 5 levels
    CHECK(too_deep(text, 4));
    const BoundedParse read = parse_bounded(text, 5);
    REQUIRE(read.parsed());
    CHECK(read.value["id"] == 7);
    CHECK(read.value["params"]["arguments"]["a"][1].contains("b"));
    CHECK(read.error.empty());
}

TEST_CASE("a deep message stops the parse at the first level too many", "[depth]") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const BoundedParse refused = parse_bounded(deep, 64);
    CHECK(refused.outcome == BoundedParse::Outcome::too_deep);
    CHECK(refused.value.is_null()); // nothing half-built is handed on
    const BoundedParse kept = parse_bounded(deep, 100000);
    CHECK(kept.parsed());
    // Text that is no JSON says where it broke; depth decides first when it comes first.
    CHECK(too_deep("[[[x", 2));
    const BoundedParse broken = parse_bounded("[[x", 2);
    CHECK(broken.outcome == BoundedParse::Outcome::not_json);
    CHECK(broken.error.find("column 3") != std::string::npos);
    CHECK(broken.value.is_null());
    CHECK(parse_bounded("", 2).outcome == BoundedParse::Outcome::not_json);
    CHECK(parse_bounded("{} {}", 2).outcome == BoundedParse::Outcome::not_json); // one message, nothing after it
}
