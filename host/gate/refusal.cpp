#include "gate/refusal.hpp"

#include <array>
#include <string_view>

namespace gatehouse::gate {

bool valid_refusal_code(std::string_view code) {
    if (code.empty() || code.size() > 64 || code[0] < 'A' || code[0] > 'Z') return false;
    for (char c : code)
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

nlohmann::json Refusal::to_json() const {
    return {{"code", code}, {"message", message}, {"next", next}};
}

nlohmann::json Refusal::to_tool_result() const {
    nlohmann::json structured = to_json();
    if (retry_after_ms) structured["next"]["retryAfterMs"] = *retry_after_ms;
    return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", code + ": " + message}}})},
            {"structuredContent", std::move(structured)},
            {"isError", true}};
}

namespace {

constexpr std::array<std::string_view, 4> kRootKeywords{"$schema", "$id", "$defs", "definitions"};
constexpr std::string_view kOwnBranch = "#/anyOf/0";

// A local reference into the tool's own schema ("#", "#/properties/x")
// follows it into its branch; $defs and definitions stay where they were.
void repoint_references(nlohmann::json& node) {
    if (node.is_array()) {
        for (auto& item : node)
            repoint_references(item);
        return;
    }
    if (!node.is_object()) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string& key = it.key();
        // Values of these keywords are data, not schemas.
        if (key == "const" || key == "enum" || key == "default" || key == "examples") continue;
        if (key == "$ref" && it->is_string()) {
            const std::string& ref = it->get_ref<const std::string&>();
            if (ref == "#")
                *it = std::string(kOwnBranch);
            else if (ref.rfind("#/", 0) == 0 && ref.rfind("#/$defs/", 0) != 0 && ref.rfind("#/definitions/", 0) != 0)
                *it = std::string(kOwnBranch) + ref.substr(1);
            continue;
        }
        repoint_references(*it);
    }
}

} // namespace

nlohmann::json published_output_schema(const nlohmann::json& own) {
    nlohmann::json published = {{"type", "object"}};
    nlohmann::json branch = own;
    for (auto key : kRootKeywords)
        if (auto it = branch.find(key); it != branch.end()) {
            published[std::string(key)] = std::move(*it);
            branch.erase(std::string(key));
        }
    repoint_references(branch);
    for (auto& [key, value] : published.items())
        if (key == "$defs" || key == "definitions") repoint_references(value);
    const nlohmann::json refusal = {
        {"type", "object"},
        {"properties",
         {{"code", {{"type", "string"}, {"description", "The refusal's stable machine code, e.g. NOT_CONNECTED."}}},
          {"message", {{"type", "string"}, {"description", "What happened and what to do, for the agent."}}},
          {"next", {{"type", "object"}, {"description", "What the agent needs for its next step."}}}}},
        {"required", {"code", "message", "next"}},
        {"description", "A refusal (isError is true): the host or the gate did not run the tool."}};
    published["anyOf"] = nlohmann::json::array({std::move(branch), refusal});
    return published;
}

// A family's own refusal (GH_STATUS_REFUSED) becomes the very shape of the
// gate's; an answer that does not fit {code, message, next} is a fault of
// the plugin, never passed on half-read.
std::optional<Refusal> family_refusal(std::string_view answer) {
    const auto parsed = nlohmann::json::parse(answer, nullptr, false);
    if (!parsed.is_object()) return std::nullopt;
    auto code = parsed.find("code");
    auto message = parsed.find("message");
    auto next = parsed.find("next");
    if (code == parsed.end() || !code->is_string() || !valid_refusal_code(code->get_ref<const std::string&>()))
        return std::nullopt;
    if (message == parsed.end() || !message->is_string() || message->get_ref<const std::string&>().empty())
        return std::nullopt;
    if (next != parsed.end() && !next->is_object()) return std::nullopt;
    for (const auto& [key, value] : parsed.items())
        if (key != "code" && key != "message" && key != "next") return std::nullopt;
    Refusal refusal;
    refusal.code = code->get<std::string>();
    refusal.message = message->get<std::string>();
    if (next != parsed.end()) refusal.next = *next;
    return refusal;
}

} // namespace gatehouse::gate
