#include "protocol/resource_read.hpp"

#include "protocol/request_environment.hpp"

namespace gatehouse::protocol {

namespace {

[[noreturn]] void not_found(const Request& request, const std::string& uri) {
    const int code = request.revision == Revision::modern_2026_07_28 ? error_code::invalid_params
                                                                     : error_code::resource_not_found_2025;
    throw ProtocolError(code,
                        "Resource not found: '" + uri +
                            "'; resources/list and resources/templates/list name "
                            "what this server can read",
                        {{"uri", uri}});
}

// The plugin's {"contents": [...]} as the protocol needs it: every item an
// object with a uri and exactly one of text or blob, both strings.
void check_contents(const Json& result, const std::string& family, const std::string& what) {
    auto contents = result.find("contents");
    if (contents == result.end() || !contents->is_array())
        plugin_fault(family, what, "answered without a \"contents\" array");
    for (std::size_t i = 0; i < contents->size(); ++i) {
        const Json& item = (*contents)[i];
        const std::string where = "contents[" + std::to_string(i) + "]";
        if (!item.is_object()) plugin_fault(family, what, where + " is not an object");
        auto uri = item.find("uri");
        if (uri == item.end() || !uri->is_string()) plugin_fault(family, what, where + " has no \"uri\" string");
        const bool text = item.contains("text"), blob = item.contains("blob");
        if (text == blob) plugin_fault(family, what, where + " must carry exactly one of \"text\" and \"blob\"");
        if (!item[text ? "text" : "blob"].is_string())
            plugin_fault(family, what, where + "." + (text ? "text" : "blob") + " is not a string");
        if (auto type = item.find("mimeType"); type != item.end() && !type->is_string())
            plugin_fault(family, what, where + ".mimeType is not a string");
    }
}

} // namespace

Json ResourceRead::run(Request& request) const {
    auto uri_it = request.params.find("uri");
    if (uri_it == request.params.end() || !uri_it->is_string())
        throw ProtocolError(error_code::invalid_params,
                            "resources/read needs params.uri, the resource's URI as a string");
    const std::string uri = uri_it->get<std::string>();

    const auto registry = registry_.current(); // kept while the read runs
    plugins::LoadedPlugin* plugin = nullptr;
    gh_resource_read_fn read = nullptr;
    void* data = nullptr;
    std::string family;
    Json variables = Json::object();
    if (const auto* resource = registry->find_resource(uri)) {
        plugin = resource->plugin, read = resource->read, data = resource->data, family = resource->family;
    } else {
        for (const auto* t : registry->resource_templates()) {
            // An upstream's server is passed the URI whole and reads its
            // values itself; a plugin is handed them, safe to map to files.
            if (auto values = t->uri_template.match(uri, !t->plugin->upstream())) {
                plugin = t->plugin, read = t->read, data = t->data, family = t->family;
                variables = *values;
                break;
            }
        }
    }
    if (!plugin) not_found(request, uri);

    check_family(gate_, family, "Resource '" + uri + "'");
    const std::string what = "resource '" + uri + "'";
    const std::string variable_text = variables.dump();
    static const Json kNoArguments = Json::object();
    auto outcome = input_rounds_.run(
        request, {uri, kNoArguments}, family, what,
        [&](std::string_view responses, std::string_view round_state) {
            return call_plugin(
                request, *plugin, family, {{"resource", uri}},
                [&](void* state, gh_call* call, gh_sink* out) {
                    return read(state, data, call, gh_str{uri.data(), uri.size()},
                                gh_str{variable_text.data(), variable_text.size()}, out);
                },
                responses, round_state);
        },
        plugin);
    if (outcome.input_required.is_object()) return std::move(outcome.input_required);
    const PluginAnswer& answer = outcome.answer;
    if (answer.status == GH_STATUS_NOT_FOUND) not_found(request, uri);
    Json result = plugin_result(answer, family, what);
    check_contents(result, family, what);

    // Caching hints are the plugin's to give (it knows whether the content
    // depends on the caller); without them the answer is private and stale at once.
    auto ttl = result.find("ttlMs");
    if (ttl != result.end() && !(ttl->is_number_unsigned() || (ttl->is_number_integer() && *ttl >= 0)))
        plugin_fault(family, what, "answered with a ttlMs that is not an integer >= 0");
    auto scope = result.find("cacheScope");
    if (scope != result.end() && *scope != "public" && *scope != "private")
        plugin_fault(family, what, "answered with a cacheScope other than \"public\" or \"private\"");

    Json out = {{"contents", std::move(result["contents"])}};
    if (request.revision == Revision::modern_2026_07_28) {
        out["ttlMs"] = ttl != result.end() ? *ttl : Json(0);
        out["cacheScope"] = scope != result.end() ? *scope : Json("private");
    }
    return out;
}

} // namespace gatehouse::protocol
