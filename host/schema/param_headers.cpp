#include "schema/param_headers.hpp"

#include "protocol/ascii_case.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>

namespace gatehouse::schema {

namespace {

// RFC 9110 token characters, for the name part of Mcp-Param-{name}.
bool token_text(std::string_view text) {
    static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isalnum(c) || extra.find(static_cast<char>(c)) != std::string_view::npos;
    });
}

void collect(const nlohmann::json& schema, std::vector<std::string>& path, std::vector<ParamHeader>& out) {
    auto props = schema.find("properties");
    if (props == schema.end() || !props->is_object()) return;
    for (const auto& [name, sub] : props->items()) {
        if (!sub.is_object()) continue;
        path.push_back(name);
        if (auto h = sub.find("x-mcp-header"); h != sub.end()) {
            std::string where = "/properties/" + name;
            if (!h->is_string() || !token_text(h->get_ref<const std::string&>()))
                throw std::invalid_argument("x-mcp-header at " + where +
                                            " must be a non-empty HTTP token (letters, digits, !#$%&'*+-.^_`|~)");
            const auto type = sub.find("type");
            const bool primitive = type != sub.end() && type->is_string() &&
                                   (*type == "string" || *type == "integer" || *type == "boolean");
            if (!primitive)
                throw std::invalid_argument("x-mcp-header at " + where +
                                            " annotates a property whose type is not string, integer or boolean");
            for (const auto& seen : out)
                if (protocol::equals_ignoring_ascii_case(seen.name, h->get_ref<const std::string&>()))
                    throw std::invalid_argument("x-mcp-header '" + h->get<std::string>() + "' is used twice");
            out.push_back({h->get<std::string>(), path});
        }
        collect(sub, path, out);
        path.pop_back();
    }
}

// Anywhere but on a property reached through `properties` keys alone (from
// the root) the annotation is invalid, and with it the tool definition.
void refuse_misplaced(const nlohmann::json& node, bool on_chain, bool is_property, const std::string& where) {
    if (node.is_array()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            refuse_misplaced(node[i], false, false, where + "/" + std::to_string(i));
        return;
    }
    if (!node.is_object()) return;
    if (node.contains("x-mcp-header") && !(on_chain && is_property))
        throw std::invalid_argument("x-mcp-header at " + (where.empty() ? "/" : where) +
                                    " is not reachable through properties alone; the spec allows it only there");
    for (const auto& [key, value] : node.items()) {
        if (key == "x-mcp-header") continue;
        if (key == "properties" && on_chain && value.is_object()) {
            for (const auto& [name, sub] : value.items())
                refuse_misplaced(sub, true, true, where + "/properties/" + name);
        } else {
            refuse_misplaced(value, false, false, where + "/" + key);
        }
    }
}

} // namespace

std::vector<ParamHeader> find_param_headers(const nlohmann::json& input_schema) {
    std::vector<ParamHeader> out;
    if (!input_schema.is_object()) return out;
    refuse_misplaced(input_schema, true, false, "");
    std::vector<std::string> path;
    collect(input_schema, path, out);
    return out;
}

} // namespace gatehouse::schema
