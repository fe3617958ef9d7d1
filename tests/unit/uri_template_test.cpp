#include "plugins/uri_template.hpp"

#include <catch2/catch.hpp>

#include <string>

using gatehouse::plugins::UriTemplate;
using Vars = std::map<std::string, std::string>;

TEST_CASE("a {name} variable matches one path segment, percent-decoded", "[uri_template]") {
    const auto t = UriTemplate::parse("test://template/{id}/data");
    CHECK(t.variables() == std::vector<std::string>{"id"});
    CHECK(t.match("test://template/123/data") == Vars{{"id", "123"}});
    CHECK(t.match("test://template/a%20b/data") == Vars{{"id", "a b"}});
    CHECK_FALSE(t.match("test://template/1/2/data"));
    CHECK_FALSE(t.match("test://template//data"));
    CHECK_FALSE(t.match("test://template/123/data/"));
    CHECK_FALSE(t.match("test://template/%zz/data"));
    CHECK(t.match("test://template/%C3%A9/data") == Vars{{"id", "\xC3\xA9"}});
    CHECK_FALSE(t.match("test://template/%FF/data"));       // not UTF-8 once decoded
    CHECK_FALSE(t.match("test://template/%C0%AF/data"));    // an overlong '/'
    CHECK_FALSE(t.match("test://template/%ED%A0%80/data")); // a surrogate
    CHECK_FALSE(t.match("other://template/123/data"));
}

TEST_CASE("a decoded value never leaves its segment, climbs a path or holds a control byte", "[uri_template]") {
    const auto name = UriTemplate::parse("file:///docs/{name}");
    CHECK(name.match("file:///docs/a.b..c") == Vars{{"name", "a.b..c"}});
    for (const char* uri :
         {"file:///docs/..%2F..%2Fetc%2Fpasswd", "file:///docs/..", "file:///docs/.", "file:///docs/%2E%2E",
          "file:///docs/a%3Fb", "file:///docs/a%23b", "file:///docs/a%00b", "file:///docs/a%0Ab", "file:///docs/a%7Fb"})
        CHECK_FALSE(name.match(uri));
    const auto path = UriTemplate::parse("file:///docs/{+path}");
    CHECK(path.match("file:///docs/a/b..c/d") == Vars{{"path", "a/b..c/d"}});
    for (const char* uri : {"file:///docs/a/../../etc/passwd", "file:///docs/../x", "file:///docs/a/%2E%2E/x",
                            "file:///docs/a/.", "file:///docs/./a", "file:///docs/a%00b"})
        CHECK_FALSE(path.match(uri));
    // As sent, for a server the URI goes to whole.
    CHECK(name.match("file:///docs/..%2Fx", false) == Vars{{"name", "../x"}});
    CHECK(path.match("file:///docs/a/../b", false) == Vars{{"path", "a/../b"}});
}

TEST_CASE("{+name} spans segments and literals split values one way", "[uri_template]") {
    const auto path = UriTemplate::parse("file:///{+path}");
    CHECK(path.match("file:///a/b/c.txt") == Vars{{"path", "a/b/c.txt"}});
    const auto pair = UriTemplate::parse("db://{table}-{row}");
    // The shortest first value that still lets the rest fit.
    CHECK(pair.match("db://a-b-c") == Vars{{"table", "a"}, {"row", "b-c"}});
    CHECK_FALSE(pair.match("db://ab"));
}

TEST_CASE("matching stays fast on hostile URIs", "[uri_template]") {
    const auto t = UriTemplate::parse("x://{+a}b{+c}b{+d}b{+e}!");
    const std::string uri = "x://" + std::string(8000, 'b');
    CHECK_FALSE(t.match(uri)); // O(parts * n): returns at once instead of trying every split
    CHECK_FALSE(t.match("x://" + std::string(9000, 'b') + "!")); // longer than any URI matched
}

TEST_CASE("templates this host cannot match are refused with the reason", "[uri_template]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "empty"},
        {"test://fixed", "has no {variable}"},
        {"test://{?query}", "operator '?'"},
        {"test://{#frag}", "operator '#'"},
        {"test://{a,b}", "not a single variable name"},
        {"test://{id:3}", "not a single variable name"},
        {"test://{list*}", "not a single variable name"},
        {"test://{a}{b}", "two expressions follow each other"},
        {"test://{id", "never closed"},
        {"test://id}", "without its '{'"},
        {"test://{}", "without a variable name"},
        {"test://{id}/{id}", "appears twice"},
        {"test://a b/{id}", "space or control character"},
    };
    for (const auto& [text, why] : cases) {
        INFO(text);
        try {
            (void)UriTemplate::parse(text);
            FAIL("accepted");
        } catch (const std::invalid_argument& e) {
            CHECK_THAT(e.what(), Catch::Contains(why));
        }
    }
}
