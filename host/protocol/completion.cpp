#include "protocol/completion.hpp"

#include "protocol/request_environment.hpp"

#include <algorithm>
#include <optional>

namespace gatehouse::protocol {

namespace {

constexpr std::size_t kMaxValues = 100; // the spec's limit per answer

std::string string_field(const Json& object, const char* key, const std::string& where) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_string())
        throw ProtocolError(error_code::invalid_params,
                            "completion/complete needs " + where + "." + key + " as a string");
    return it->get<std::string>();
}

// What to ask: the plugin, its complete function and data, and its family.
struct Target {
    plugins::LoadedPlugin* plugin = nullptr;
    gh_complete_fn complete = nullptr;
    void* data = nullptr;
    std::string family;
    std::string what;
};

Json completion(Json values, std::optional<Json> total = std::nullopt, bool has_more = false) {
    Json c = {{"values", std::move(values)}};
    if (total) c["total"] = *total;
    if (has_more) c["hasMore"] = true;
    return {{"completion", std::move(c)}};
}

} // namespace

Json Completion::run(Request& request) const {
    const Json& params = request.params;
    auto ref = params.find("ref");
    if (ref == params.end() || !ref->is_object())
        throw ProtocolError(error_code::invalid_params,
                            "completion/complete needs params.ref, {\"type\": \"ref/prompt\", \"name\"} or "
                            "{\"type\": \"ref/resource\", \"uri\"}");
    auto argument = params.find("argument");
    if (argument == params.end() || !argument->is_object())
        throw ProtocolError(error_code::invalid_params,
                            "completion/complete needs params.argument, {\"name\", \"value\"}");
    const std::string argument_name = string_field(*argument, "name", "params.argument");
    const std::string value = string_field(*argument, "value", "params.argument");
    Json context = Json::object();
    if (auto c = params.find("context"); c != params.end() && !c->is_null()) {
        auto args = c->is_object() ? c->find("arguments") : c->end();
        if (!c->is_object() || (args != c->end() && !args->is_object()))
            throw ProtocolError(error_code::invalid_params,
                                "completion/complete params.context must be {\"arguments\": {...}}");
        if (args != c->end()) context = *args;
    }

    const auto registry = registry_.current(); // kept while the completion runs
    Target target;
    const std::string type = string_field(*ref, "type", "params.ref");
    if (type == "ref/prompt") {
        const std::string name = string_field(*ref, "name", "params.ref");
        const auto* prompt = registry->find_prompt(name);
        if (!prompt)
            throw ProtocolError(error_code::invalid_params,
                                "Unknown prompt: '" + name + "'; prompts/list names the prompts", {{"prompt", name}});
        if (!prompt->argument(argument_name))
            throw ProtocolError(error_code::invalid_params,
                                "Prompt '" + name + "' has no argument '" + argument_name + "'.");
        target = {prompt->plugin, prompt->complete, prompt->data, prompt->family, "prompt '" + name + "'"};
    } else if (type == "ref/resource") {
        const std::string uri = string_field(*ref, "uri", "params.ref");
        const auto* t = registry->find_resource_template(uri);
        if (!t) {
            // A fixed URI has nothing to fill in.
            if (registry->find_resource(uri)) return completion(Json::array());
            throw ProtocolError(error_code::invalid_params,
                                "Unknown resource template: '" + uri + "'; resources/templates/list names them",
                                {{"uri", uri}});
        }
        const auto& vars = t->uri_template.variables();
        if (std::find(vars.begin(), vars.end(), argument_name) == vars.end())
            throw ProtocolError(error_code::invalid_params,
                                "Resource template '" + uri + "' has no variable '" + argument_name + "'.");
        target = {t->plugin, t->complete, t->data, t->family, "resource template '" + uri + "'"};
    } else {
        throw ProtocolError(error_code::invalid_params,
                            "completion/complete params.ref.type must be \"ref/prompt\" or \"ref/resource\"");
    }
    if (!target.complete) return completion(Json::array());
    check_family(gate_, target.family, "The completion of " + target.what);

    const std::string context_text = context.dump();
    const auto answer = call_plugin(
        request, *target.plugin, target.family, {{"complete", *ref}}, [&](void* state, gh_call* call, gh_sink* out) {
            return target.complete(state, target.data, call, gh_str{argument_name.data(), argument_name.size()},
                                   gh_str{value.data(), value.size()}, gh_str{context_text.data(), context_text.size()},
                                   out);
        });
    Json result = plugin_result(answer, target.family, target.what);
    auto values = result.find("values");
    if (values == result.end() || !values->is_array() ||
        !std::all_of(values->begin(), values->end(), [](const Json& v) { return v.is_string(); }))
        plugin_fault(target.family, target.what, "completed without a \"values\" array of strings");
    std::optional<Json> total;
    if (auto t = result.find("total"); t != result.end()) {
        if (!t->is_number_integer() || *t < 0)
            plugin_fault(target.family, target.what, "answered a total that is not an integer >= 0");
        total = *t;
    }
    auto more = result.find("hasMore");
    bool has_more = more != result.end() && more->is_boolean() && more->get<bool>();
    if (values->size() > kMaxValues) {
        if (!total) total = values->size();
        values->erase(values->begin() + kMaxValues, values->end());
        has_more = true;
    }
    return completion(std::move(*values), total, has_more);
}

} // namespace gatehouse::protocol
