#include "protocol/mcp_server.hpp"

#include <catch2/catch.hpp>

using gatehouse::protocol::nests_deeper_than;

TEST_CASE("nesting is counted over arrays and objects alike", "[depth]") {
    CHECK_FALSE(nests_deeper_than("{}", 1));
    CHECK(nests_deeper_than("{}", 0));
    CHECK_FALSE(nests_deeper_than(R"({"a":[{"b":[]}]})", 4));
    CHECK(nests_deeper_than(R"({"a":[{"b":[]}]})", 3));
    CHECK_FALSE(nests_deeper_than("42", 0));
}

TEST_CASE("siblings do not add up, only depth counts", "[depth]") {
    CHECK_FALSE(nests_deeper_than("[[],[],[],[],[]]", 2));
    CHECK_FALSE(nests_deeper_than(R"({"a":{},"b":{},"c":{"d":1}})", 2));
}

TEST_CASE("brackets inside strings do not count", "[depth]") {
    CHECK_FALSE(nests_deeper_than(R"({"text":"[[[[{{{{"})", 1));
    // An escaped quote does not end the string.
    CHECK_FALSE(nests_deeper_than(R"({"text":"a\"[[[[[["})", 1));
    // An escaped backslash does end it before the quote.
    CHECK(nests_deeper_than(R"(["a\\",[[]]])", 2));
}

TEST_CASE("a deep message is caught without parsing it", "[depth]") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    CHECK(nests_deeper_than(deep, 64));
    CHECK_FALSE(nests_deeper_than(deep, 100000));
    // Unbalanced closers never make the count wrap around.
    CHECK_FALSE(nests_deeper_than("]]]]]][", 1));
}
