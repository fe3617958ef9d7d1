#include "mrtr/input_requests.hpp"

#include "mrtr/request_state_sealer.hpp"

#include <stdexcept>

namespace gatehouse::mrtr {

namespace {

constexpr std::size_t kMaxRequests = 16;

bool known_method(const std::string& method) {
    return method == "elicitation/create" || method == "sampling/createMessage" || method == "roots/list";
}

bool declared(const nlohmann::json& capabilities, const char* name) {
    auto it = capabilities.find(name);
    return it != capabilities.end() && it->is_object();
}

} // namespace

InputRequired parse_input_required(std::string_view text) {
    const nlohmann::json answer = nlohmann::json::parse(text, nullptr, false);
    if (!answer.is_object()) throw std::invalid_argument("its input_required answer is not a JSON object");
    InputRequired out;
    if (auto requests = answer.find("inputRequests"); requests != answer.end()) {
        if (!requests->is_object()) throw std::invalid_argument("\"inputRequests\" is not an object");
        if (requests->size() > kMaxRequests)
            throw std::invalid_argument("it asks for more than " + std::to_string(kMaxRequests) + " inputs at once");
        for (const auto& [key, request] : requests->items()) {
            if (key.empty()) throw std::invalid_argument("an input request has an empty key");
            if (!request.is_object()) throw std::invalid_argument("input request '" + key + "' is not an object");
            auto method = request.find("method");
            if (method == request.end() || !method->is_string() || !known_method(method->get<std::string>()))
                throw std::invalid_argument("input request '" + key +
                                            "' has no method of elicitation/create, sampling/createMessage, "
                                            "roots/list");
            auto params = request.find("params");
            if (params != request.end() && !params->is_object())
                throw std::invalid_argument("the params of input request '" + key + "' are not an object");
            out.requests[key] = {{"method", *method},
                                 {"params", params != request.end() ? *params : nlohmann::json::object()}};
        }
    }
    if (auto state = answer.find("requestState"); state != answer.end()) {
        if (!state->is_string()) throw std::invalid_argument("\"requestState\" is not a string");
        out.state = state->get<std::string>();
        if (out.state.size() > RequestStateSealer::kMaxStateBytes)
            throw std::invalid_argument("its requestState is over 8 KiB");
    }
    if (out.requests.empty() && out.state.empty())
        throw std::invalid_argument("it asks for input with neither inputRequests nor requestState");
    return out;
}

nlohmann::json missing_capabilities(const nlohmann::json& requests, const nlohmann::json& client_capabilities) {
    nlohmann::json missing = nlohmann::json::object();
    for (const auto& [key, request] : requests.items()) {
        const std::string& method = request["method"].get_ref<const std::string&>();
        if (method == "sampling/createMessage") {
            if (!declared(client_capabilities, "sampling")) missing["sampling"] = nlohmann::json::object();
        } else if (method == "roots/list") {
            if (!declared(client_capabilities, "roots")) missing["roots"] = nlohmann::json::object();
        } else {
            const auto& params = request["params"];
            const std::string mode = params.contains("mode") && params["mode"].is_string()
                                         ? params["mode"].get<std::string>()
                                         : std::string("form");
            const auto elicitation = client_capabilities.find("elicitation");
            bool ok = elicitation != client_capabilities.end() && elicitation->is_object();
            if (ok && mode == "url") ok = declared(*elicitation, "url");
            if (ok && mode != "url") ok = elicitation->empty() || declared(*elicitation, "form");
            if (!ok) missing["elicitation"][mode] = nlohmann::json::object();
        }
    }
    return missing;
}

std::optional<std::string> start_task_answer(std::string_view text) {
    const auto answer = nlohmann::json::parse(text, nullptr, false);
    if (!answer.is_object() || answer.contains("inputRequests")) return std::nullopt;
    const auto start = answer.find("startTask");
    if (start == answer.end() || !start->is_boolean() || !start->get<bool>()) return std::nullopt;
    const auto state = answer.find("requestState");
    if (state == answer.end()) return std::string();
    if (!state->is_string() || state->get_ref<const std::string&>().size() > RequestStateSealer::kMaxStateBytes)
        return std::nullopt;
    return state->get<std::string>();
}

} // namespace gatehouse::mrtr
