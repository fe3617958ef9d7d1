#include "transport/line_framer.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using gatehouse::transport::LineFramer;

namespace {

struct Framed {
    std::vector<std::string> lines;
    int oversized = 0;
};

// Feeds `chunks` one by one, as separate reads would deliver them.
Framed frame(std::size_t limit, const std::vector<std::string>& chunks, std::string* last = nullptr) {
    Framed out;
    LineFramer framer(limit);
    for (const auto& chunk : chunks)
        framer.feed(
            chunk, [&](std::string_view line) { out.lines.emplace_back(line); }, [&] { ++out.oversized; });
    const std::string rest = framer.finish();
    if (last) *last = rest;
    return out;
}

} // namespace

TEST_CASE("LineFramer joins lines split across reads and drops empty lines", "[framing]") {
    std::string last;
    auto f = frame(100, {"{\"a\"", ":1}\r\n\n\r\n{\"b\":2}\n{\"c\""}, &last);
    REQUIRE(f.lines == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"});
    REQUIRE(f.oversized == 0);
    REQUIRE(last == "{\"c\"");
}

TEST_CASE("LineFramer refuses an oversized line once and keeps serving the next", "[framing]") {
    std::string last;
    auto f = frame(8, {"0123456", "789abc", "def\nshort\n0123456789"}, &last);
    REQUIRE(f.lines == std::vector<std::string>{"short"});
    REQUIRE(f.oversized == 2);
    REQUIRE(last.empty()); // the unterminated tail broke the limit too
}

TEST_CASE("LineFramer counts the limit in bytes before the newline", "[framing]") {
    auto f = frame(5, {"12345\n123456\n"});
    REQUIRE(f.lines == std::vector<std::string>{"12345"});
    REQUIRE(f.oversized == 1);
}
