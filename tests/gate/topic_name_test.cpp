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
}
