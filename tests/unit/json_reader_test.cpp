#include "protocol/json_bytes.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/json_writer.hpp"
#include "../fuzz/same_tree.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using gatehouse::protocol::append_json;
using gatehouse::protocol::BoundedParse;
using gatehouse::protocol::Json;
using gatehouse::protocol::parse_bounded;
using gatehouse::protocol::written_json;
using gatehouse::protocol::written_result;
using gatehouse::protocol::written_text;
using gatehouse::testing::same_tree;

namespace {

// The reader and nlohmann's parser agree on `text`: both refuse it, or both
// build the same tree. Returns whether it was JSON.
// A NUL byte is JSON nowhere (raw in a string nor between tokens), where
// nlohmann's parser takes it for the end of the text and reads "1\0x" as 1.
bool agrees_with_nlohmann(const std::string& text) {
    const Json expected = Json::parse(text, nullptr, false);
    const BoundedParse read = parse_bounded(text);
    INFO("text: " << text);
    if (expected.is_discarded() || text.find('\0') != std::string::npos) {
        CHECK(read.outcome == BoundedParse::Outcome::not_json);
        CHECK(read.value.is_null());
        CHECK_FALSE(read.error.empty());
        return false;
    }
    INFO("error: " << read.error);
    REQUIRE(read.parsed());
    CHECK(same_tree(read.value, expected));
    return true;
}

} // namespace

TEST_CASE("the reader builds what nlohmann's parser builds", "[json_reader]") {
    const std::vector<std::string> texts = {
        "{}",
        "[]",
        "0",
        "-0",
        "1",
        "-1",
        "42",
        " 42 ",
        "\t\r\n42\n",
        "3.25",
        "-3.25e-2",
        "1E5",
        "1e+5",
        "0.0",
        "-0.0",
        "1e-400",
        "2.2250738585072014e-308",
        "4.9e-324",
        "1.7976931348623157e308",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775807",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "0.1",
        "1.0000000000000002",
        "true",
        "false",
        "null",
        R"("")",
        R"("plain")",
        R"("a\"b\\c\/d\be\ff\ng\rh\ti")",
        R"("\u0041\u00e9\u20ac\uD83D\uDE00")",
        R"("\u0000")",
        R"("é€😀")",
        "\"\x7f\"",
        R"({"a":1,"a":2})",
        R"({"a":{"b":[1,2]},"a":3})",
        R"({"a":[],"b":{},"c":[{}]})",
        R"([1,"two",3.0,true,false,null,{"k":"v"},[[]]])",
        R"({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"noop","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
        "\xEF\xBB\xBF{}",
        " [ 1 , 2 ] ",
        R"({ "a" : 1 })",
        // Not JSON.
        "",
        " ",
        "{",
        "}",
        "[",
        "]",
        "[1,]",
        "{\"a\":1,}",
        "{,}",
        "[,1]",
        "{\"a\"}",
        "{\"a\" 1}",
        "{a:1}",
        "{'a':1}",
        "01",
        "-",
        "-a",
        "1.",
        ".5",
        "1e",
        "1e+",
        "+1",
        "0x10",
        "1e999",
        "-1e999",
        "NaN",
        "Infinity",
        "tru",
        "nul",
        "truex",
        "nulll",
        "[1 2]",
        "{\"a\":1 \"b\":2}",
        "{} {}",
        "[] x",
        "\"abc",
        "\"a\\\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12G4\"",
        "\"\\uD800\"",
        "\"\\uD800\\u0041\"",
        "\"\\uDC00\"",
        "\"\\uD800x\"",
        "\"a\nb\"",
        "\"a\tb\"",
        std::string("\"a\0b\"", 5),
        std::string("1\0", 2),
        "\"\x80\"",
        "\"\xC0\xAF\"",
        "\"\xC2\"",
        "\"\xE0\x80\xAF\"",
        "\"\xED\xA0\x80\"",
        "\"\xF4\x90\x80\x80\"",
        "\"\xF5\x80\x80\x80\"",
        "\"\xFF\"",
        "\xEF\xBB{}",
        "\xEF{}",
        "/* comment */ 1",
        "[1]]",
        "{\"a\":1}}",
        "\x01",
    };
    int json = 0;
    for (const auto& text : texts)
        json += agrees_with_nlohmann(text) ? 1 : 0;
    CHECK(json > 40);
}

TEST_CASE("mutated messages are refused or read as nlohmann reads them", "[json_reader]") {
    const std::vector<std::string> seeds = {
        R"({"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"n","arguments":{"x":[1,-2.5e3,"é\u00e9\n"],"y":{"z":null,"w":true}}}})",
        R"([{"a":"\uD83D\uDE00"},[],{},[[0]],18446744073709551615,-9223372036854775808,"\\\/\b"])",
    };
    std::mt19937 random(20261205);
    const std::string alphabet = "{}[]\":,\\ tfn0123456789-+.eEu\xC3\xA9\xED\xA0\x80\xF0\x9F\x98";
    int json = 0, refused = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string text = seeds[static_cast<std::size_t>(round) % seeds.size()];
        const int edits = 1 + static_cast<int>(random() % 4);
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const std::size_t at = random() % text.size();
            switch (random() % 4) {
            case 0: text[at] = alphabet[random() % alphabet.size()]; break;
            case 1: text.erase(at, 1 + random() % 3); break;
            case 2: text.insert(at, 1, alphabet[random() % alphabet.size()]); break;
            default: text.resize(at); break;
            }
        }
        (agrees_with_nlohmann(text) ? json : refused) += 1;
    }
    // Both kinds of case were met.
    CHECK(json > 100);
    CHECK(refused > 1000);
}

TEST_CASE("a refusal says what was wrong, at which line and column", "[json_reader]") {
    const BoundedParse broken = parse_bounded("[[x", 8);
    REQUIRE(broken.outcome == BoundedParse::Outcome::not_json);
    CHECK(broken.error.find("line 1, column 3") != std::string::npos);
    CHECK(broken.error.find("found 'x'") != std::string::npos);
    const BoundedParse second_line = parse_bounded("{\n  \"a\": 1,\n  \"b\" 2\n}");
    CHECK(second_line.error.find("line 3, column 7") != std::string::npos);
    CHECK(second_line.error.find("expected ':'") != std::string::npos);
    CHECK(parse_bounded("\"\xFF\"").error.find("not UTF-8") != std::string::npos);
    CHECK(parse_bounded("[1").error.find("found the end of the text") != std::string::npos);
    CHECK(parse_bounded("{}\x01").error.find("byte 0x01") != std::string::npos);
    CHECK(parse_bounded(std::string("{}\0{}", 5)).error.find("column 3: expected the end of the text") !=
          std::string::npos);
}

TEST_CASE("depth is counted as containers open, and a deep text needs no deep stack", "[json_reader]") {
    CHECK(parse_bounded("[[]]", 2).parsed());
    CHECK(parse_bounded("[[]]", 1).outcome == BoundedParse::Outcome::too_deep);
    CHECK(parse_bounded(R"({"a":{"b":{}}})", 2).outcome == BoundedParse::Outcome::too_deep);
    CHECK(parse_bounded(R"({"a":{},"b":[],"c":{"d":1}})", 2).parsed());
    // A million levels: the reader keeps its open containers on the heap.
    const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
    const BoundedParse read = parse_bounded(deep);
    REQUIRE(read.parsed());
    CHECK(read.value.is_array());
    const BoundedParse unclosed = parse_bounded(std::string(1000000, '{'));
    CHECK(unclosed.outcome == BoundedParse::Outcome::not_json);
    CHECK(unclosed.value.is_null());
}

namespace {

std::string nlohmann_line(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string written(const Json& value) {
    std::string out;
    append_json(out, value);
    return out;
}

} // namespace

TEST_CASE("the writer writes what nlohmann's dump writes, byte for byte", "[json_reader]") {
    const std::vector<Json> values = {
        nullptr,
        true,
        false,
        0,
        -1,
        42u,
        std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::uint64_t>::max(),
        0.0,
        -0.0,
        1.5,
        1e300,
        3.0,
        0.1,
        1e-7,
        std::numeric_limits<double>::infinity(),
        std::nan(""),
        "",
        "plain",
        "quote \" backslash \\ slash /",
        std::string("\b\f\n\r\t\x01\x1f\x7f\0end", 12),
        "é€😀",
        Json::array(),
        Json::object(),
        // Not UTF-8: each bad sequence becomes U+FFFD, as nlohmann replaces it.
        "bad \xff byte",
        "cut \xe2\x82",
        "surrogate \xed\xa0\x80 here",
        "overlong \xc0\xaf",
        "\xf4\x90\x80\x80",
        Json{{"b", 1}, {"a", {1, "two", nullptr}}, {"\xff", "key not UTF-8"}, {"é", Json::object()}},
        Json::binary({1, 2, 3}),
    };
    for (const auto& value : values) {
        INFO(nlohmann_line(value));
        CHECK(written(value) == nlohmann_line(value));
    }
    // Appended, not replaced.
    std::string line = "x";
    append_json(line, Json{{"k", "v"}});
    CHECK(line == R"(x{"k":"v"})");
}

TEST_CASE("JSON written already is copied as it is, other binary values as nlohmann writes them", "[json_reader]") {
    const std::string identity = R"({"io.modelcontextprotocol/serverInfo":{"name":"g\u00e9","version":"1"}})";
    const Json result = {{"content", Json::array()}, {"_meta", written_json(identity)}, {"resultType", "complete"}};
    CHECK(written(result) == R"({"_meta":)" + identity + R"(,"content":[],"resultType":"complete"})");
    // A copy carries the same text; the message parses back to the tree it stands for.
    const Json copy = result;
    CHECK(Json::parse(written(copy))["_meta"] == Json::parse(identity));
    // Another subtype, or none, is not text.
    for (const Json& other : {Json::binary({'{', '}'}), Json::binary({'{', '}'}, 7)})
        CHECK(written(other) == nlohmann_line(other));
}

TEST_CASE("a scan of plain bytes stops where a byte at a time would, at every place in a word", "[json_reader]") {
    using gatehouse::protocol::json_bytes::plain;
    using gatehouse::protocol::json_bytes::skip_plain;
    // Every byte value, at every offset of a run longer than two words, after
    // plain bytes and before more of them.
    for (int value = 0; value < 256; ++value) {
        for (std::size_t at = 0; at < 19; ++at) {
            std::string run(19, 'a');
            run[at] = static_cast<char>(value);
            const char* expected = run.data();
            while (expected < run.data() + run.size() && plain(*expected))
                ++expected;
            INFO("byte " << value << " at " << at);
            CHECK(skip_plain(run.data(), run.data() + run.size()) == expected);
            // A shorter end inside the run is never passed.
            CHECK(skip_plain(run.data(), run.data() + at) == run.data() + at);
        }
    }
}

TEST_CASE("the reader says when an object names a member twice", "[json_reader]") {
    CHECK_FALSE(parse_bounded(R"({"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]})").names_repeated);
    const BoundedParse twice = parse_bounded(R"({"a":1,"b":{"c":2,"c":3}})");
    CHECK(twice.names_repeated);
    CHECK(twice.value["b"]["c"] == 3); // the last wins
    CHECK(parse_bounded(R"([{"x":1,"x":1}])").names_repeated);
}

TEST_CASE("the reader says when it kept a number rounded", "[json_reader]") {
    for (const char* exact : {"[18446744073709551615]", "[-9223372036854775808]", "[1.5e300]", "[0.1]",
                              "[0.00012345678901234567]", "[-1.2345678901234567e-300]"})
        CHECK_FALSE(parse_bounded(exact).numbers_rounded);
    for (const char* rounded : {"[18446744073709551616]", "{\"a\":[-9223372036854775809]}", "[0.100000000000000000001]",
                                "[123456789012345678.5]", "[1e-400]"}) {
        INFO(rounded);
        const BoundedParse read = parse_bounded(rounded);
        CHECK(read.numbers_rounded);
        CHECK(read.parsed());
    }
}

TEST_CASE("an answer written around a result's text is the message make_result makes", "[json_reader]") {
    const auto text = [](const Json& written) { return std::string(*written_text(written)); };
    CHECK(text(written_result(7, R"({"content":[]})")) == R"({"id":7,"jsonrpc":"2.0","result":{"content":[]}})");
    CHECK(text(written_result("a\"b", R"({"content":[]})")) ==
          R"({"id":"a\"b","jsonrpc":"2.0","result":{"content":[]}})");
    // Members put first, with a comma only where members follow.
    CHECK(text(written_result(1, R"({"content":[]})", R"("_meta":{},"resultType":"complete")")) ==
          R"({"id":1,"jsonrpc":"2.0","result":{"_meta":{},"resultType":"complete","content":[]}})");
    CHECK(text(written_result(1, "{ }", R"("resultType":"complete")")) ==
          R"({"id":1,"jsonrpc":"2.0","result":{"resultType":"complete" }})");
    // It parses to the tree make_result builds.
    const Json result = {{"content", Json::array({{{"type", "text"}, {"text", "é"}}})}};
    CHECK(Json::parse(text(written_result(3, result.dump()))) ==
          Json::parse(written(gatehouse::protocol::make_result(3, result))));
    // Anything that looks inside finds neither an error nor a result.
    const Json answer = written_result(1, R"({"content":[]})");
    CHECK_FALSE(answer.contains("error"));
    CHECK(answer.find("result") == answer.end());
    CHECK_FALSE(written_text(Json{{"content", Json::array()}}));
}

TEST_CASE("what the reader builds, the writer writes as nlohmann would", "[json_reader]") {
    std::mt19937 random(5);
    const std::string alphabet = "ab\"\\/\n\x01\x7f\xc3\xa9\xff\xe2\x82\xac";
    for (int round = 0; round < 2000; ++round) {
        Json value = Json::object();
        Json* at = &value;
        const int members = 1 + static_cast<int>(random() % 6);
        for (int m = 0; m < members; ++m) {
            std::string text;
            for (int i = static_cast<int>(random() % 12); i > 0; --i)
                text += alphabet[random() % alphabet.size()];
            switch (random() % 5) {
            case 0: (*at)[text] = text; break;
            case 1: (*at)[text] = static_cast<std::int64_t>(random()) - (1LL << 31); break;
            case 2: (*at)[text] = static_cast<double>(random()) / 7.0; break;
            case 3: (*at)[text] = Json::array({text, nullptr, true}); break;
            default: at = &((*at)[text] = Json::object()); break;
            }
        }
        INFO(nlohmann_line(value));
        REQUIRE(written(value) == nlohmann_line(value));
    }
}
