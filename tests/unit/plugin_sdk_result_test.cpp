// The plugin SDK's gh::Result writes its text blocks itself; what it writes
// must be the bytes nlohmann writes for the same result, escapes, member
// order and the replacement of bytes that are not UTF-8 included.
#include <gatehouse/plugin.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;

std::string as_nlohmann_writes(const Json& content, const Json& structured = nullptr) {
    Json result = {{"content", content}};
    if (!structured.is_null()) result["structuredContent"] = structured;
    return result.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json text_block(const std::string& text) {
    return {{"type", "text"}, {"text", text}};
}

std::vector<std::string> texts() {
    std::vector<std::string> out = {"",
                                    "plain words",
                                    "a \"quoted\" word and a \\ backslash",
                                    "tab\there, line\nbreak, return\r, feed\f, bell\b",
                                    "slash / and delete \x7f",
                                    "Договор с ООО «Ромашка» до 31.12",
                                    "emoji \xF0\x9F\x98\x80 end",
                                    "bad \xff byte",
                                    "cut \xD0 sequence",
                                    "overlong \xC0\xAF slash"};
    std::string controls;
    for (char c = 1; c < 0x20; ++c)
        controls += c;
    out.push_back(controls);
    out.push_back(std::string("nul \0 inside", 12));
    return out;
}

} // namespace

TEST_CASE("a text result is written as nlohmann writes it, whatever its text", "[plugin-sdk]") {
    for (const auto& text : texts()) {
        INFO("text: " << Json(text).dump(-1, ' ', true, Json::error_handler_t::replace));
        CHECK(gh::Result::text(text).serialize() == as_nlohmann_writes(Json::array({text_block(text)})));
    }
}

TEST_CASE("text blocks, added blocks and structured content keep their order and bytes", "[plugin-sdk]") {
    const Json image = {{"type", "image"}, {"data", "aGVsbG8="}, {"mimeType", "image/png"}};
    const Json structured = {{"count", 2}, {"names", {"a", "b\n"}}, {"ratio", 0.5}};
    gh::Result result = gh::Result::structured(structured, "two \"names\"");
    result.add(image).add(text_block("after \xff"));
    CHECK(result.serialize() ==
          as_nlohmann_writes(Json::array({text_block("two \"names\""), image, text_block("after \xff")}), structured));
    // Without a readable text the JSON itself is the text.
    CHECK(gh::Result::structured(structured).serialize() ==
          as_nlohmann_writes(Json::array({text_block(structured.dump())}), structured));
}

TEST_CASE("structured content with bytes that are not UTF-8 is written, its text with them replaced", "[plugin-sdk]") {
    const Json structured = {{"name", "caf\xe9"}};
    const std::string readable = structured.dump(-1, ' ', false, Json::error_handler_t::replace);
    CHECK(readable == "{\"name\":\"caf\xEF\xBF\xBD\"}");
    // Before, the readable text's dump threw: a tool's answer became a fault of the plugin.
    gh::Result result = gh::Result::structured(structured);
    CHECK(result.serialize() == as_nlohmann_writes(Json::array({text_block(readable)}), structured));
}
