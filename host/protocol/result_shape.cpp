#include "protocol/result_shape.hpp"

#include "schema/json_schema.hpp"

#include <string_view>

namespace gatehouse::protocol {

// Keys looked up by length, not measured with strlen at every member compared.
using namespace std::string_view_literals;

namespace {

using Problem = std::optional<std::string>;

std::string at(const std::string& pointer, std::string_view key) {
    return pointer + "/" + schema::json_pointer_token(std::string(key));
}

Problem fault(const std::string& pointer, const std::string& what) {
    return "at " + (pointer.empty() ? std::string("/") : pointer) + ": " + what;
}

// `key` present only as a string (required: present at all).
Problem string_field(const Json& object, std::string_view key, const std::string& pointer, bool required,
                     const char* block) {
    auto it = object.find(key);
    if (it == object.end()) {
        if (!required) return std::nullopt;
        return fault(pointer, std::string(block) + " needs \"" + std::string(key) + "\", a string");
    }
    if (!it->is_string()) return fault(at(pointer, key), "must be a string");
    return std::nullopt;
}

// What the browser's atob() and the SDKs' base64 checks accept of an
// encoder's output: the standard alphabet, '=' only as the last one or two
// characters, a length that is a multiple of four.
bool base64(const std::string& text) {
    if (text.size() % 4 != 0) return false;
    std::size_t padding = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '=') {
            ++padding;
            continue;
        }
        if (padding > 0) return false;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
            return false;
    }
    return padding <= 2;
}

Problem base64_field(const Json& object, std::string_view key, const std::string& pointer, const char* block) {
    if (auto problem = string_field(object, key, pointer, true, block)) return problem;
    if (!base64(object.find(key)->get_ref<const std::string&>()))
        return fault(at(pointer, key), "must be base64 (standard alphabet, padded)");
    return std::nullopt;
}

Problem meta_problem(const Json& object, const std::string& pointer) {
    if (auto meta = object.find("_meta"sv); meta != object.end() && !meta->is_object())
        return fault(at(pointer, "_meta"), "must be an object");
    return std::nullopt;
}

Problem annotations_problem(const Json& block, const std::string& pointer) {
    auto it = block.find("annotations"sv);
    if (it == block.end()) return std::nullopt;
    const std::string where = at(pointer, "annotations");
    if (!it->is_object()) return fault(where, "must be an object");
    if (auto audience = it->find("audience"sv); audience != it->end()) {
        if (!audience->is_array())
            return fault(at(where, "audience"), "must be an array of \"user\" and \"assistant\"");
        for (std::size_t i = 0; i < audience->size(); ++i) {
            const Json& role = (*audience)[i];
            if (role != "user" && role != "assistant")
                return fault(at(where, "audience") + "/" + std::to_string(i), "must be \"user\" or \"assistant\"");
        }
    }
    if (auto priority = it->find("priority"sv); priority != it->end()) {
        if (!priority->is_number() || priority->get<double>() < 0 || priority->get<double>() > 1)
            return fault(at(where, "priority"), "must be a number from 0 to 1");
    }
    if (auto problem = string_field(*it, "lastModified", where, false, "annotations")) return problem;
    return std::nullopt;
}

Problem resource_link_problem(const Json& block, const std::string& pointer) {
    const char* name = "a resource_link block";
    if (auto p = string_field(block, "uri", pointer, true, name)) return p;
    if (auto p = string_field(block, "name", pointer, true, name)) return p;
    if (auto p = string_field(block, "title", pointer, false, name)) return p;
    if (auto p = string_field(block, "description", pointer, false, name)) return p;
    if (auto p = string_field(block, "mimeType", pointer, false, name)) return p;
    if (auto size = block.find("size"sv); size != block.end() && !size->is_number_integer())
        return fault(at(pointer, "size"), "must be an integer");
    if (auto icons = block.find("icons"sv); icons != block.end()) {
        if (!icons->is_array()) return fault(at(pointer, "icons"), "must be an array of icons");
        for (std::size_t i = 0; i < icons->size(); ++i) {
            const Json& icon = (*icons)[i];
            const std::string where = at(pointer, "icons") + "/" + std::to_string(i);
            if (!icon.is_object()) return fault(where, "must be an icon object");
            if (auto p = string_field(icon, "src", where, true, "an icon")) return p;
        }
    }
    return std::nullopt;
}

Problem embedded_resource_problem(const Json& block, const std::string& pointer) {
    auto resource = block.find("resource"sv);
    if (resource == block.end() || !resource->is_object())
        return fault(pointer, "a resource block needs \"resource\", an object with uri and text or blob");
    const std::string where = at(pointer, "resource");
    if (auto p = string_field(*resource, "uri", where, true, "an embedded resource")) return p;
    if (auto p = string_field(*resource, "mimeType", where, false, "an embedded resource")) return p;
    if (auto p = meta_problem(*resource, where)) return p;
    if (resource->contains("text"sv)) return string_field(*resource, "text", where, true, "an embedded resource");
    if (resource->contains("blob"sv)) return base64_field(*resource, "blob", where, "an embedded resource");
    return fault(where, "an embedded resource needs \"text\" or \"blob\"");
}

} // namespace

std::optional<std::string> content_block_problem(const Json& block, const std::string& pointer) {
    if (!block.is_object()) return fault(pointer, "a content block must be an object");
    auto type = block.find("type"sv);
    if (type == block.end() || !type->is_string())
        return fault(pointer, "a content block needs \"type\" (text, image, audio, resource_link or resource)");
    const std::string& kind = type->get_ref<const std::string&>();
    Problem problem;
    if (kind == "text")
        problem = string_field(block, "text", pointer, true, "a text block");
    else if (kind == "image" || kind == "audio") {
        const char* name = kind == "image" ? "an image block" : "an audio block";
        problem = base64_field(block, "data", pointer, name);
        if (!problem) problem = string_field(block, "mimeType", pointer, true, name);
    } else if (kind == "resource_link")
        problem = resource_link_problem(block, pointer);
    else if (kind == "resource")
        problem = embedded_resource_problem(block, pointer);
    else
        // The text is the plugin's: only its size is bounded, not its bytes.
        return fault(at(pointer, "type"),
                     "\"" + kind.substr(0, 64) + "\" is no content type (text, image, audio, resource_link, resource)");
    if (problem) return problem;
    if (auto p = annotations_problem(block, pointer)) return p;
    return meta_problem(block, pointer);
}

std::optional<std::string> tool_result_problem(const Json& result, Revision revision) {
    if (auto content = result.find("content"sv); content != result.end()) {
        if (!content->is_array()) return fault("/content", "must be an array of content blocks");
        for (std::size_t i = 0; i < content->size(); ++i)
            if (auto p = content_block_problem((*content)[i], "/content/" + std::to_string(i))) return p;
    }
    if (auto flag = result.find("isError"sv); flag != result.end() && !flag->is_boolean())
        return fault("/isError", "must be true or false");
    if (auto type = result.find("resultType"sv); type != result.end() && *type != "complete")
        return fault("/resultType",
                     "is the host's to set; a tool asks for input by answering GH_STATUS_INPUT_REQUIRED");
    if (auto structured = result.find("structuredContent"sv);
        structured != result.end() && revision == Revision::legacy_2025_11_25 && !structured->is_object())
        return fault("/structuredContent", "must be an object (protocol revision 2025-11-25)");
    return meta_problem(result, "");
}

} // namespace gatehouse::protocol
