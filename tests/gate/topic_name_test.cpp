#include "session/topic_name.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using gatehouse::session::topic_problem;

TEST_CASE("topic names", "[session]") {
    for (const std::string& good :
         std::vector<std::string>{"orders", "Q3-report", "a_b", "x", "заказы", "注文", "Straße2", std::string(64, 'a')})
        CHECK_FALSE(topic_problem(good));
    for (const std::string& bad :
         std::vector<std::string>{"", "../x", "a/b", "..", ".", "a b", "a.b", std::string(65, 'a'),
                                  std::string("a\0b", 3), "a\nb", "a\tb", "\x7f", "\xff\xfe", "\xc0\xaf", "a\\b", "~"})
        CHECK(topic_problem(bad));
    // 64 characters of a two-byte script is fine; 65 is not.
    std::string cyrillic;
    for (int i = 0; i < 64; ++i)
        cyrillic += "ж";
    CHECK_FALSE(topic_problem(cyrillic));
    CHECK(topic_problem(cyrillic + "ж"));
    // A topic names a folder, and a file name holds 255 bytes at most: 63
    // letters of four bytes fit, 64 do not, though they are 64 characters.
    std::string deseret;
    for (int i = 0; i < 63; ++i)
        deseret += "\xF0\x90\x90\x80"; // U+10400, a letter
    CHECK_FALSE(topic_problem(deseret));
    const auto too_long = topic_problem(deseret + "\xF0\x90\x90\x80");
    REQUIRE(too_long);
    CHECK_THAT(*too_long, Catch::Contains("255 bytes"));
}
