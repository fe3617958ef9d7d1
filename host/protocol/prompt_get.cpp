#include "protocol/prompt_get.hpp"

#include "protocol/request_environment.hpp"
#include "protocol/result_shape.hpp"

namespace gatehouse::protocol {

namespace {

std::string argument_names(const plugins::Prompt& prompt) {
    if (prompt.arguments.empty()) return "it takes none";
    std::string out = "it takes: ";
    for (std::size_t i = 0; i < prompt.arguments.size(); ++i)
        out += (i ? ", " : "") + prompt.arguments[i].name + (prompt.arguments[i].required ? " (required)" : "");
    return out;
}

const Json& checked_arguments(const Request& request, const plugins::Prompt& prompt) {
    static const Json kNone = Json::object();
    auto a = request.params.find("arguments");
    const Json& args = (a == request.params.end() || a->is_null()) ? kNone : *a;
    if (!args.is_object())
        throw ProtocolError(error_code::invalid_params,
                            "prompts/get params.arguments must be a JSON object of strings");
    for (const auto& [name, value] : args.items()) {
        if (!prompt.argument(name))
            throw ProtocolError(error_code::invalid_params, "Prompt '" + prompt.name + "' has no argument '" + name +
                                                                "'; " + argument_names(prompt) + ".");
        if (!value.is_string())
            throw ProtocolError(error_code::invalid_params,
                                "Argument '" + name + "' of prompt '" + prompt.name + "' must be a string.");
    }
    for (const auto& declared : prompt.arguments)
        if (declared.required && !args.contains(declared.name))
            throw ProtocolError(error_code::invalid_params, "Prompt '" + prompt.name + "' needs the argument '" +
                                                                declared.name + "'; " + argument_names(prompt) + ".");
    return args;
}

// The plugin's {"description"?, "messages": [...]}: each message a role and
// one content block that keeps the protocol's schema rules.
void check_messages(const Json& result, const std::string& family, const std::string& what) {
    auto messages = result.find("messages");
    if (messages == result.end() || !messages->is_array())
        plugin_fault(family, what, "answered without a \"messages\" array");
    for (std::size_t i = 0; i < messages->size(); ++i) {
        const Json& m = (*messages)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) plugin_fault(family, what, where + " is not an object");
        auto role = m.find("role");
        if (role == m.end() || (*role != "user" && *role != "assistant"))
            plugin_fault(family, what, where + ".role is neither \"user\" nor \"assistant\"");
        auto content = m.find("content");
        if (content == m.end()) plugin_fault(family, what, where + " has no content block");
        if (auto problem = content_block_problem(*content, "/messages/" + std::to_string(i) + "/content"))
            plugin_fault(family, what, "answered a content block that breaks the protocol's schema " + *problem);
    }
    if (auto d = result.find("description"); d != result.end() && !d->is_string())
        plugin_fault(family, what, "answered with a description that is not a string");
}

} // namespace

Json PromptGet::run(Request& request) const {
    auto name_it = request.params.find("name");
    if (name_it == request.params.end() || !name_it->is_string())
        throw ProtocolError(error_code::invalid_params, "prompts/get needs params.name, the prompt's name as a string");
    const std::string& name = name_it->get_ref<const std::string&>();
    const auto registry = registry_.current(); // kept while the prompt runs
    const plugins::Prompt* prompt = registry->find_prompt(name);
    if (!prompt)
        throw ProtocolError(error_code::invalid_params,
                            "Unknown prompt: '" + name + "'; prompts/list names the prompts", {{"prompt", name}});
    const Json& checked = checked_arguments(request, *prompt);
    const std::string arguments = checked.dump();

    check_family(gate_, prompt->family, "Prompt '" + prompt->name + "'");
    const std::string what = "prompt '" + prompt->name + "'";
    auto outcome = input_rounds_.run(
        request, {prompt->name, checked}, prompt->family, what,
        [&](std::string_view responses, std::string_view round_state) {
            return call_plugin(
                request, *prompt->plugin, prompt->family, {{"prompt", prompt->name}},
                [&](void* state, gh_call* call, gh_sink* out) {
                    return prompt->get(state, prompt->data, call, gh_str{arguments.data(), arguments.size()}, out);
                },
                responses, round_state);
        },
        prompt->plugin);
    if (outcome.input_required.is_object()) return std::move(outcome.input_required);
    Json result = plugin_result(outcome.answer, prompt->family, what);
    check_messages(result, prompt->family, what);
    Json out = {{"messages", std::move(result["messages"])}};
    if (result.contains("description")) out["description"] = std::move(result["description"]);
    return out;
}

} // namespace gatehouse::protocol
