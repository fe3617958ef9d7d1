#include "config/yaml_document.hpp"

#include <catch2/catch.hpp>

using gatehouse::config::yaml_bool;
using gatehouse::config::yaml_integer;
using gatehouse::config::yaml_real;
using gatehouse::config::YamlDocument;
using gatehouse::config::YamlNode;
using gatehouse::config::YamlSyntaxError;

namespace {

YamlNode::Kind kind_of(const YamlDocument& document, std::string_view key) {
    return document.root()[key].kind();
}

// The parser's message and place for a text that is not YAML.
std::string syntax_error(std::string_view text) {
    try {
        (void)YamlDocument::parse(text);
    } catch (const YamlSyntaxError& e) {
        return std::to_string(e.where().line) + ":" + std::to_string(e.where().column) + ": " + e.what();
    }
    return "";
}

} // namespace

TEST_CASE("a YAML document: kinds, text, quoting and the place of each node", "[config][yaml]") {
    const auto document = YamlDocument::parse("# a comment\n"
                                              "name: gatehouse\n"
                                              "empty:\n"
                                              "tilde: ~\n"
                                              "word_null: Null\n"
                                              "quoted_null: 'null'\n"
                                              "list: [a, \"b\"]\n"
                                              "block: |\n  two\n  lines\n"
                                              "map:\n  inner: 1\n"
                                              "tagged: !!str 12\n");
    const auto root = document.root();
    REQUIRE(root.is_map());
    CHECK(root.size() == 9);
    CHECK(root["name"].text() == "gatehouse");
    CHECK(root["name"].mark().line == 2);
    CHECK(root["name"].mark().column == 7);
    CHECK(root["name"].quoted() == false);
    CHECK(kind_of(document, "empty") == YamlNode::Kind::null);
    CHECK(kind_of(document, "tilde") == YamlNode::Kind::null);
    CHECK(kind_of(document, "word_null") == YamlNode::Kind::null);
    CHECK(kind_of(document, "quoted_null") == YamlNode::Kind::scalar);
    CHECK(root["quoted_null"].quoted());
    CHECK(root["list"].is_sequence());
    REQUIRE(root["list"].items().size() == 2);
    CHECK(root["list"].items()[1].text() == "b");
    CHECK(root["list"].items()[1].quoted());
    CHECK(root["block"].text() == "two\nlines\n");
    CHECK(root["block"].quoted());
    CHECK(root["map"]["inner"].text() == "1");
    CHECK(root["map"]["inner"].mark().line == 12);
    CHECK(root["tagged"].quoted());
    // What a map does not hold, and what a scalar cannot hold.
    CHECK_FALSE(root["missing"]);
    CHECK_FALSE(root["name"]["deeper"]);
    CHECK(root["missing"].items().empty());
    CHECK(root["missing"].mark().line == 0);
}

TEST_CASE("a YAML document keeps a repeated key twice and finds the first", "[config][yaml]") {
    const auto document = YamlDocument::parse("a: 1\nb: 2\na: 3\n");
    const auto root = document.root();
    REQUIRE(root.entries().size() == 3);
    CHECK(root.entries()[2].key.text() == "a");
    CHECK(root.entries()[2].key.mark().line == 3);
    CHECK(root["a"].text() == "1");
}

TEST_CASE("a YAML alias is the node its anchor names, itself included", "[config][yaml]") {
    const auto document = YamlDocument::parse("base: &b {x: 1}\ncopy: *b\nloop: &l {me: *l}\n");
    const auto root = document.root();
    CHECK(root["copy"]["x"].text() == "1");
    CHECK(root["copy"].mark().line == root["base"].mark().line);
    // A map that holds itself: walkers bound their depth.
    CHECK(root["loop"]["me"]["me"]["me"].is_map());
}

TEST_CASE("a YAML document: the first document only, and an empty text reads as null", "[config][yaml]") {
    const auto empty = YamlDocument::parse("");
    CHECK(empty.root().is_null());
    const auto comment = YamlDocument::parse("# only a comment\n");
    CHECK(comment.root().is_null());
    const auto two = YamlDocument::parse("a: 1\n---\n[not, read\n");
    CHECK(two.root()["a"].text() == "1");
}

TEST_CASE("text that is not YAML is refused with the parser's words and place", "[config][yaml]") {
    CHECK(syntax_error("a: [1, 2\n") ==
          "2:1: did not find expected ',' or ']' (while parsing a flow sequence that starts at line 1, column 4)");
    CHECK(syntax_error("a: *none\n") == "1:4: the alias *none names no anchor (&name) written before it");
    CHECK(syntax_error("a: \"\xff\"\n").find("1:5: invalid leading UTF-8 octet (0xff)") == 0);
    CHECK_THAT(syntax_error("allow: [::1]\n"), Catch::EndsWith("quote a value that starts with ':', such as an IPv6 "
                                                               "address ('::1')"));
    // Deep nesting is refused, not followed: the bound is the parser's own.
    const std::string deep(YamlDocument::kMaxNesting + 1, '[');
    CHECK_THAT(syntax_error(deep), Catch::EndsWith("the YAML nests deeper than 1000 levels"));
    const std::string deep_enough = std::string(YamlDocument::kMaxNesting, '[') + std::string(1000, ']');
    CHECK(syntax_error(deep_enough).empty());
}

TEST_CASE("what a YAML scalar reads as", "[config][yaml]") {
    const auto document = YamlDocument::parse("{t: true, T: True, TT: TRUE, y: y, on: on, n: no, off: OFF, mixed: tRue,"
                                              " dec: 42, neg: -7, plus: +5, hex: 0x1f, oct: 0o17, zero: 010,"
                                              " big: 99999999999999999999, half: 0.5, exp: 1.5e3, dot: .5, bad: 1.2.3,"
                                              " inf: .inf, word: abc, list: [1]}");
    const auto root = document.root();
    bool b = false;
    for (const char* key : {"t", "T", "TT", "y", "on"}) {
        INFO(key);
        CHECK((yaml_bool(root[key], b) && b));
    }
    for (const char* key : {"n", "off"}) {
        INFO(key);
        CHECK((yaml_bool(root[key], b) && !b));
    }
    CHECK_FALSE(yaml_bool(root["mixed"], b));
    CHECK_FALSE(yaml_bool(root["dec"], b));
    CHECK_FALSE(yaml_bool(root["list"], b));

    long long i = 0;
    CHECK((yaml_integer(root["dec"], i) && i == 42));
    CHECK((yaml_integer(root["neg"], i) && i == -7));
    CHECK((yaml_integer(root["plus"], i) && i == 5));
    CHECK((yaml_integer(root["hex"], i) && i == 31));
    CHECK((yaml_integer(root["oct"], i) && i == 15));
    CHECK((yaml_integer(root["zero"], i) && i == 10)); // YAML 1.2: a leading zero is no octal
    CHECK_FALSE(yaml_integer(root["big"], i));
    CHECK_FALSE(yaml_integer(root["half"], i));
    CHECK_FALSE(yaml_integer(root["word"], i));

    double d = 0;
    CHECK((yaml_real(root["half"], d) && d == 0.5));
    CHECK((yaml_real(root["exp"], d) && d == 1500));
    CHECK((yaml_real(root["dot"], d) && d == 0.5));
    CHECK((yaml_real(root["big"], d) && d == 1e20));
    CHECK((yaml_real(root["plus"], d) && d == 5));
    CHECK_FALSE(yaml_real(root["bad"], d));
    CHECK_FALSE(yaml_real(root["inf"], d));
    CHECK_FALSE(yaml_real(root["word"], d));
}
