#include "schema/json_schema.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

using gatehouse::schema::json_pointer_token;
using gatehouse::schema::JsonSchema;
using nlohmann::json;

namespace {

std::string compile_error(const std::string& schema_text) {
    try {
        JsonSchema::compile(json::parse(schema_text));
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("schemas that are not JSON Schemas do not compile", "[schema]") {
    CHECK_THAT(compile_error(R"([1, 2])"), Catch::Contains("must be a JSON object"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":5})"), Catch::Contains("not a valid JSON Schema"));
    CHECK_THAT(compile_error(R"({"type":"object","required":"name"})"), Catch::Contains("not a valid JSON Schema"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"n":{"minimum":"zero"}}})"),
               Catch::Contains("not a valid JSON Schema"));
    CHECK(compile_error(R"({"type":"object","properties":{"n":{"type":"integer"}}})").empty());
}

TEST_CASE("a regular expression that does not compile is refused at compile time, not at validation", "[schema]") {
    const auto error = compile_error(R"({"type":"object","properties":{"code":{"type":"string","pattern":"[a-"}}})");
    CHECK_THAT(error, Catch::Contains("/properties/code/pattern"));
    CHECK_THAT(error, Catch::Contains("does not compile"));
    CHECK_THAT(compile_error(R"({"type":"object","patternProperties":{"(":{"type":"string"}}})"),
               Catch::Contains("/patternProperties"));
    // Data that only looks like a schema keyword is not a regex.
    CHECK(compile_error(R"({"type":"object","properties":{"k":{"enum":[{"pattern":"[a-"}]}}})").empty());
    CHECK(compile_error(R"({"type":"object","properties":{"code":{"type":"string","pattern":"^[a-z]+$"}}})").empty());
}

TEST_CASE("a multipleOf not above zero is refused at compile time, and a valid one still validates", "[schema]") {
    // Validating an integer against multipleOf 0 took it modulo zero, which ends the process.
    const auto zero = compile_error(R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":0}}})");
    CHECK_THAT(zero, Catch::Contains("/properties/n/multipleOf"));
    CHECK_THAT(zero, Catch::Contains("greater than 0"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":-1}}})"),
               Catch::Contains("greater than 0"));
    CHECK_THAT(compile_error(R"({"type":"object","items":[{"multipleOf":-0.5}]})"), Catch::Contains("/items/0"));
    // A property named multipleOf, and data that looks like the keyword, are no keyword.
    CHECK(compile_error(R"({"type":"object","properties":{"multipleOf":{"type":"integer"}}})").empty());
    CHECK(compile_error(R"({"type":"object","properties":{"k":{"const":{"multipleOf":0}}}})").empty());
    const auto schema =
        JsonSchema::compile(json::parse(R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":3}}})"));
    CHECK_FALSE(schema->validate(json{{"n", 9}}));
    CHECK(schema->validate(json{{"n", 10}}));
    CHECK(schema->validate(json{{"n", std::numeric_limits<std::int64_t>::min()}}));
}

TEST_CASE("only the draft-07 and 2020-12 dialects are accepted", "[schema]") {
    CHECK(compile_error(R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object"})").empty());
    CHECK(compile_error(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"})").empty());
    const auto error = compile_error(R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"object"})");
    CHECK_THAT(error, Catch::Contains("unsupported JSON Schema dialect"));
    CHECK_THAT(error, Catch::Contains("draft-04"));
    CHECK_THAT(compile_error(R"({"$schema":4,"type":"object"})"), Catch::Contains("$schema must be a string"));
}

TEST_CASE("a remote $ref is refused, never fetched", "[schema]") {
    CHECK_FALSE(compile_error(R"({"$ref":"https://schemas.example.com/person.json"})").empty());
    CHECK_FALSE(
        compile_error(R"({"type":"object","properties":{"p":{"$ref":"http://127.0.0.1:9/x.json#/defs/p"}}})").empty());
    // A local $ref is fine.
    CHECK(compile_error(R"({"type":"object","definitions":{"n":{"type":"integer"}},
                            "properties":{"p":{"$ref":"#/definitions/n"}}})")
              .empty());
}

TEST_CASE("a long $ref or $id is refused before the schema parser reads it", "[schema]") {
    // valijson matches both against a regular expression that recurses per
    // character: 200 000 of them would exhaust the stack.
    const std::string urn = "urn:ab:" + std::string(200000, 'a');
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"p":{"$ref":")" + urn + R"("}}})"),
               Catch::Contains("$ref at /properties/p/$ref is 200007 bytes long; at most 1024"));
    CHECK_THAT(compile_error(R"({"type":"object","$id":")" + urn + R"("})"), Catch::Contains("$id at /$id"));
    // A property named like the keyword is not one.
    CHECK(compile_error(R"({"type":"object","properties":{"$ref":{"type":"string"}}})").empty());
}

TEST_CASE("a valid value passes and an invalid one names its JSON pointer", "[schema]") {
    auto schema = JsonSchema::compile(json::parse(R"({
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "integer"}}}
            }},
            "a/b": {"type": "integer"},
            "c~d": {"type": "object", "properties": {"e/~f": {"type": "boolean"}}},
            "count": {"type": "integer", "minimum": 1}
        },
        "required": ["count"]
    })"));

    CHECK_FALSE(schema->validate(json::parse(R"({"count": 1, "items": [{"name": "x", "tags": [1, 2]}]})")));

    auto pointer_of = [&](const char* value) {
        auto violation = schema->validate(json::parse(value));
        REQUIRE(violation);
        CHECK_FALSE(violation->reason.empty());
        return violation->pointer;
    };
    CHECK(pointer_of(R"({"count": 0})") == "/count");
    CHECK(pointer_of(R"({"count": 1, "items": [{"name": "a"}, {"name": 5}]})") == "/items/1/name");
    CHECK(pointer_of(R"({"count": 1, "items": [{"tags": [1]}, {"tags": [2, "x"]}]})") == "/items/1/tags/1");
    CHECK(pointer_of(R"({"count": 1, "a/b": "no"})") == "/a~1b");
    CHECK(pointer_of(R"({"count": 1, "c~d": {"e/~f": 1}})") == "/c~0d/e~1~0f");
    CHECK(pointer_of(R"({})") == "");
    CHECK(pointer_of(R"([])") == "");
}

TEST_CASE("a violation reads as a sentence naming where", "[schema]") {
    gatehouse::schema::SchemaViolation v{"/items/0", "Value type not permitted by 'type' constraint."};
    CHECK(v.sentence() == "at /items/0: Value type not permitted by 'type' constraint");
    gatehouse::schema::SchemaViolation root{"", "Missing required property 'count'."};
    CHECK_THAT(root.sentence(), Catch::StartsWith("at / (the arguments object): Missing required property"));
}

TEST_CASE("JSON pointer tokens escape ~ before /", "[schema]") {
    CHECK(json_pointer_token("plain") == "plain");
    CHECK(json_pointer_token("a/b") == "a~1b");
    CHECK(json_pointer_token("a~b") == "a~0b");
    CHECK(json_pointer_token("~/") == "~0~1");
    CHECK(json_pointer_token("~1") == "~01");
}

TEST_CASE("a $ref chain that comes back to itself is refused at compile time, not followed without end", "[schema]") {
    CHECK_THAT(compile_error(R"({"type":"object","$ref":"#"})"), Catch::Contains("never to a schema"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"a":{"$ref":"#/properties/a"}}})"),
               Catch::Contains("never to a schema"));
    CHECK_THAT(compile_error(R"({"type":"object","$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}},
                                 "properties":{"a":{"$ref":"#/$defs/x"}}})"),
               Catch::Contains("never to a schema"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}})"),
               Catch::Contains("names nothing"));
    // Recursion through a schema is fine: a tree of nodes.
    const auto tree = JsonSchema::compile(json::parse(
        R"({"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}})"));
    CHECK_FALSE(tree->validate(json::parse(R"({"name":"a","children":[{"name":"b","children":[]}]})")));
    CHECK(tree->validate(json::parse(R"({"name":"a","children":[{"name":5}]})")));
}

TEST_CASE("a $ref into data is refused: data is never read as a schema", "[schema]") {
    // valijson would read {"multipleOf": 0} in default as a schema no check
    // here saw, and take 7 modulo 0.
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"n":{"$ref":"#/default"}},"default":{"multipleOf":0}})"),
               Catch::Contains("holds data"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"n":{"$ref":"#/properties/m/enum/0"},
                                 "m":{"enum":[{"multipleOf":0}]}}})"),
               Catch::Contains("holds data"));
}

TEST_CASE("multipleOf is checked on the value itself: fractions fail, and no divisor ends the process", "[schema]") {
    const auto two = JsonSchema::compile(json::parse(R"({"type":"object","properties":{"n":{"multipleOf":2}}})"));
    CHECK_FALSE(two->validate(json{{"n", 4}}));
    CHECK(two->validate(json{{"n", 2.5}}));
    CHECK(two->validate(json{{"n", 4.7}}));
    CHECK(two->validate(json{{"n", 0.5}}));
    CHECK_FALSE(two->validate(json{{"n", std::numeric_limits<std::int64_t>::min()}}));
    // A divisor beyond 2^53 (18446744073709551615 read as -1 would take
    // INT64_MIN modulo -1), or given as text, is refused.
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"n":{"multipleOf":18446744073709551615}}})"),
               Catch::Contains("at most 2^53"));
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"n":{"multipleOf":"0"}}})"),
               Catch::Contains("/properties/n/multipleOf"));
    // The schema as given is what is published.
    CHECK(two->document()["properties"]["n"]["multipleOf"].is_number_integer());
}

TEST_CASE("a schema says whether validating it runs std::regex", "[schema]") {
    CHECK_FALSE(
        JsonSchema::compile(json::parse(R"({"type":"object","properties":{"s":{"type":"string"}}})"))->uses_regex());
    CHECK(JsonSchema::compile(json::parse(R"({"type":"object","properties":{"s":{"pattern":"^a+$"}}})"))->uses_regex());
    CHECK(JsonSchema::compile(json::parse(R"({"type":"object","patternProperties":{"^x":{}}})"))->uses_regex());
    for (const char* format : {"date", "time", "date-time"})
        CHECK(
            JsonSchema::compile(json{{"type", "object"}, {"properties", {{"d", {{"format", format}}}}}})->uses_regex());
    CHECK_FALSE(
        JsonSchema::compile(json::parse(R"({"type":"object","properties":{"e":{"format":"email"}}})"))->uses_regex());
}

TEST_CASE("a large value's violation is told without collecting every error", "[schema]") {
    const auto unique = JsonSchema::compile(
        json::parse(R"({"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}})"));
    // 20 000 equal items: collecting one error per equal pair would take
    // some 2e8 errors; the answer comes at once instead.
    const json tags = {{"tags", json(std::vector<int>(20000, 0))}};
    const auto violation = unique->validate(tags);
    REQUIRE(violation);
    CHECK_THAT(violation->reason, Catch::Contains("not pinpointed"));
    // A small one is still pinpointed.
    const auto small = unique->validate(json{{"tags", {1, 1}}});
    REQUIRE(small);
    CHECK(small->pointer == "/tags");
}

TEST_CASE("a property may be named like a data keyword: its schema is checked, and a $ref may name it", "[schema]") {
    // A property called "default" holds a schema like any other.
    const auto named = JsonSchema::compile(
        json::parse(R"({"type":"object","properties":{"default":{"type":"string","pattern":"^(a|b)*$"}}})"));
    CHECK(named->uses_regex());
    CHECK_THAT(compile_error(R"({"type":"object","properties":{"enum":{"multipleOf":0}}})"),
               Catch::Contains("/properties/enum/multipleOf"));
    const auto halves =
        JsonSchema::compile(json::parse(R"({"type":"object","properties":{"const":{"multipleOf":2}}})"));
    CHECK(halves->validate(json{{"const", 2.5}}));
    const auto referring = JsonSchema::compile(json::parse(
        R"({"type":"object","properties":{"default":{"type":"integer"},"other":{"$ref":"#/properties/default"}}})"));
    CHECK(referring->validate(json{{"other", "text"}}));
    CHECK_FALSE(referring->validate(json{{"other", 3}}));
}

TEST_CASE("a loop of schemas applying to one value through allOf, anyOf, not or if is refused", "[schema]") {
    for (const char* loop :
         {R"({"type":"object","properties":{"x":{"allOf":[{"$ref":"#/properties/x"}]}}})",
          R"({"type":"object","properties":{"x":{"anyOf":[{"type":"null"},{"$ref":"#/properties/x"}]}}})",
          R"({"type":"object","properties":{"x":{"not":{"$ref":"#/properties/x"}}}})",
          R"({"type":"object","properties":{"x":{"if":{"$ref":"#/properties/x"}}}})",
          R"({"type":"object","$defs":{"a":{"oneOf":[{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},
                                 "properties":{"x":{"$ref":"#/$defs/a"}}})"}) {
        INFO(loop);
        CHECK_THAT(compile_error(loop), Catch::Contains("never to a schema"));
    }
    // Through a part of the value, a loop is recursion, and fine.
    CHECK(compile_error(R"({"type":"object","properties":{"x":{"allOf":[{"type":"object"}],
                            "properties":{"y":{"$ref":"#/properties/x"}}}}})")
              .empty());
}

TEST_CASE("a schema with patterns checks values from many threads at once, each check its own verdict", "[schema]") {
    // The schema keeps the validators that hold its compiled regexes between
    // checks; threads checking at the same moment each take one of their own.
    const auto schema = JsonSchema::compile(json::parse(R"({"type":"object","properties":{
        "id":{"type":"string","pattern":"^[0-9a-f]{8}-[0-9a-f]{4}$"},
        "tags":{"type":"object","patternProperties":{"^x-":{"type":"integer"}}}},"required":["id"]})"));
    const json good = {{"id", "0123abcd-beef"}, {"tags", {{"x-a", 1}}}};
    const json bad_id = {{"id", "0123abcd-BEEF"}};
    const json bad_tag = {{"id", "0123abcd-beef"}, {"tags", {{"x-a", "one"}}}};
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                switch ((i + t) % 3) {
                case 0:
                    if (schema->validate(good)) ++wrong;
                    break;
                case 1: {
                    const auto v = schema->validate(bad_id);
                    if (!v || v->pointer != "/id") ++wrong;
                    break;
                }
                default: {
                    const auto v = schema->validate(bad_tag);
                    if (!v || v->pointer != "/tags/x-a") ++wrong;
                }
                }
            }
        });
    for (auto& t : threads)
        t.join();
    CHECK(wrong == 0);
}

namespace {

// "ok", or where and why the value broke the schema.
std::string verdict_of(const JsonSchema& schema, const json& value) {
    const auto v = schema.validate(value);
    return v ? v->sentence() : std::string("ok");
}

} // namespace

TEST_CASE("the date, time and date-time formats check strings by their rules and say which was broken", "[schema]") {
    const auto schema = JsonSchema::compile(json::parse(R"({"type":"object","properties":{
        "day":{"type":"string","format":"date"},
        "at":{"type":"string","format":"time"},
        "when":{"format":"date-time"},
        "coded":{"type":"string","format":"date","pattern":"^2"},
        "ref":{"$ref":"#/properties/when"}}})"));
    // The schema an agent reads is the one given.
    CHECK(schema->document()["properties"]["when"]["format"] == "date-time");
    const auto verdict = [&](const json& value) { return verdict_of(*schema, value); };
    CHECK(verdict({{"day", "2024-02-29"}}) == "ok");
    CHECK(verdict({{"day", "2024-02-30"}}) == "at /day: String should be a valid date");
    CHECK(verdict({{"day", "2024-04-31"}}) == "at /day: String should be a valid date");
    CHECK(verdict({{"day", "2024-12-31"}}) == "ok");
    CHECK(verdict({{"day", "2024-13-01"}}) == "at /day: String should be a valid date");
    CHECK(verdict({{"day", "2024-1-01"}}) == "at /day: String should be a valid date");
    CHECK(verdict({{"at", "16:52:45Z"}}) == "ok");
    CHECK(verdict({{"at", "23:59:60.25+02:00"}}) == "ok");
    CHECK(verdict({{"at", "24:00:00Z"}}) == "at /at: String should be a valid time");
    CHECK(verdict({{"at", "16:52:45"}}) == "at /at: String should be a valid time");
    CHECK(verdict({{"when", "2022-07-18T16:52:45Z"}}) == "ok");
    CHECK(verdict({{"when", "2022-07-18t16:52:45.5-05:30"}}) == "ok");
    CHECK(verdict({{"when", "2022-07-18 16:52:45Z"}}) == "at /when: String should be a valid date-time");
    CHECK(verdict({{"ref", "2022-06-31T00:00:00Z"}}) == "at /ref: String should be a valid date-time");
    // A format holds for strings only; the type says what else may come.
    CHECK(verdict({{"when", 5}}) == "ok");
    CHECK(verdict({{"day", 5}}) == "at /day: Value type not permitted by 'type' constraint");
    // A pattern of the schema's own still holds beside the format, in its words.
    CHECK(verdict({{"coded", "2024-02-29"}}) == "ok");
    CHECK(verdict({{"coded", "1999-01-01"}}) == "at /coded: Failed to match regex specified by 'pattern' constraint");
    CHECK(verdict({{"coded", "2024-02-30"}}) == "at /coded: String should be a valid date");
    CHECK(verdict({{"coded", "1999-02-30"}}) == "at /coded: Failed to match regex specified by 'pattern' constraint");
}

TEST_CASE("a format's failure is told from a pattern's on the same branch of an if", "[schema]") {
    const auto schema = JsonSchema::compile(json::parse(R"({"type":"object","properties":{"d":{
        "if":{"pattern":"^a"},"then":{"format":"date"},"else":{"pattern":"^[0-9]"}}}})"));
    const auto verdict = [&](const json& value) { return verdict_of(*schema, value); };
    CHECK(verdict({{"d", "xyz"}}) == "at /d: Failed to match regex specified by 'pattern' constraint");
    CHECK(verdict({{"d", "abc"}}) == "at /d: String should be a valid date");
    CHECK(verdict({{"d", "42"}}) == "ok");
}
