#include "protocol/input_rounds.hpp"

#include "plugins/loaded_plugin.hpp"

#include "mrtr/input_requests.hpp"
#include "protocol/tool_call.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace gatehouse::protocol {

namespace {

// A 2025-11-25 request asks again at most this often before the host gives up
// on the plugin: each round waits for a person, so more is a plugin's loop.
constexpr int kMaxLegacyRounds = 16;

struct RoundInput {
    std::string responses = "{}";
    const std::string* sealed_state = nullptr;
};

// params.inputResponses and params.requestState of a 2026-07-28 retry.
RoundInput read_round_input(const Json& params) {
    RoundInput in;
    if (auto responses = params.find("inputResponses"); responses != params.end()) {
        if (!responses->is_object())
            throw ProtocolError(error_code::invalid_params,
                                "params.inputResponses must be an object of the client's results, keyed like the "
                                "inputRequests they answer.");
        for (const auto& [key, value] : responses->items())
            if (!value.is_object())
                throw ProtocolError(error_code::invalid_params,
                                    "params.inputResponses['" + key +
                                        "'] must be an object: the result of the request it answers.");
        in.responses = responses->dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    if (auto state = params.find("requestState"); state != params.end()) {
        if (!state->is_string())
            throw ProtocolError(error_code::invalid_params,
                                "params.requestState must be the string the server sent, unchanged.");
        in.sealed_state = &state->get_ref<const std::string&>();
    }
    return in;
}

} // namespace

mrtr::InputRequired parsed_input_required(const PluginAnswer& answer, const std::string& family,
                                          const std::string& what) {
    try {
        return mrtr::parse_input_required(answer.text);
    } catch (const std::invalid_argument& e) {
        plugin_fault(family, what, std::string("asked for input malformed: ") + e.what());
    }
}

void require_capabilities(const Request& request, const mrtr::InputRequired& asked, const std::string& what) {
    const Json missing = mrtr::missing_capabilities(asked.requests, request.client_capabilities);
    if (!missing.empty())
        throw ProtocolError(error_code::missing_required_client_capability,
                            "Missing required client capability: " + what + " needs " + missing.dump() +
                                ", which the client did not declare in its capabilities.",
                            {{"requiredCapabilities", missing}});
}

mrtr::InputRequired checked_input_required(const Request& request, const PluginAnswer& answer,
                                           const std::string& family, const std::string& what) {
    mrtr::InputRequired asked = parsed_input_required(answer, family, what);
    require_capabilities(request, asked, what);
    return asked;
}

mrtr::StateBinding InputRounds::binding(const Request& request, Subject subject) {
    return {request.principal.owner_key(), request.method, subject.target,
            mrtr::RequestStateSealer::fingerprint(subject.arguments)};
}

InputRounds::Round InputRounds::open_round(const Request& request, Subject subject) const {
    RoundInput in = read_round_input(request.params);
    Round round{std::move(in.responses), {}};
    if (in.sealed_state) {
        auto opened = sealer_->open(*in.sealed_state, binding(request, subject));
        if (!opened)
            throw ProtocolError(error_code::invalid_params,
                                "Invalid or expired requestState: call again without requestState and "
                                "inputResponses to start over.");
        round.state = std::move(*opened);
    }
    return round;
}

InputRounds::Outcome InputRounds::close_round(const Request& request, Subject subject, const std::string& family,
                                              const std::string& what, PluginAnswer answer) const {
    Outcome outcome{std::move(answer), nullptr};
    if (outcome.answer.status != GH_STATUS_INPUT_REQUIRED) return outcome;
    const mrtr::InputRequired asked = checked_input_required(request, outcome.answer, family, what);
    outcome.input_required = {{"resultType", "input_required"}};
    if (!asked.requests.empty()) outcome.input_required["inputRequests"] = asked.requests;
    outcome.input_required["requestState"] = sealer_->seal(binding(request, subject), asked.state);
    return outcome;
}

InputRounds::Outcome InputRounds::run(Request& request, Subject subject, const std::string& family,
                                      const std::string& what, const Attempt& attempt,
                                      plugins::LoadedPlugin* plugin) const {
    if (request.revision == Revision::modern_2026_07_28) {
        const Round round = open_round(request, subject);
        return close_round(request, subject, family, what, attempt(round.responses, round.state));
    }

    std::string responses = "{}";
    std::string state;
    for (int round = 0; round < kMaxLegacyRounds; ++round) {
        Outcome outcome{attempt(responses, state), nullptr};
        if (outcome.answer.status != GH_STATUS_INPUT_REQUIRED) return outcome;
        const mrtr::InputRequired asked = parsed_input_required(outcome.answer, family, what);
        try {
            require_capabilities(request, asked, what);
            responses = ask_client(request, asked.requests, what).dump(-1, ' ', false, Json::error_handler_t::replace);
        } catch (const std::exception& e) {
            if (plugin) plugin->drop_round(asked.state, request.principal.owner_key(), e.what());
            throw;
        }
        state = asked.state;
    }
    const std::string why = "asked for input " + std::to_string(kMaxLegacyRounds) + " rounds in a row";
    if (plugin) plugin->drop_round(state, request.principal.owner_key(), "the call " + why);
    plugin_fault(family, what, why);
}

Json InputRounds::ask_client(Request& request, const Json& input_requests, const std::string& what) const {
    // A call already over (cancelled, or answered by its deadline) asks no one.
    if (request.cancelled()) throw ProtocolError(error_code::internal_error, "The request was cancelled.");
    auto& table = request.connection->client_requests();
    struct Asked {
        std::string key;
        std::string method;
        Json id;
        std::shared_ptr<mrtr::ClientRequests::Pending> pending;
    };
    std::vector<Asked> asked;
    // Whatever ends the wait, no response is expected any longer.
    struct ForgetAll {
        mrtr::ClientRequests& table;
        std::vector<Asked>& asked;
        ~ForgetAll() {
            for (const auto& a : asked)
                table.forget(a.id);
        }
    } forget_all{table, asked};
    // Every request goes out before the first wait: the client may answer them in any order.
    for (const auto& [key, input] : input_requests.items()) {
        auto [id, pending] = table.expect();
        asked.push_back({key, input["method"].get<std::string>(), id, pending});
        request.reply->send({{"jsonrpc", "2.0"}, {"id", id}, {"method", input["method"]}, {"params", input["params"]}});
    }
    Json responses = Json::object();
    // One deadline for the whole round, however many requests it asked.
    const auto deadline = std::chrono::steady_clock::now() + client_timeout_;
    for (auto& a : asked) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        auto response = mrtr::ClientRequests::wait(*a.pending, std::max(left, std::chrono::milliseconds(0)),
                                                   [&request] { return request.cancelled(); });
        if (!response) {
            if (request.cancelled()) throw ProtocolError(error_code::internal_error, "The request was cancelled.");
            throw ProtocolError(error_code::internal_error, "The client did not answer the server's " + a.method +
                                                                " within " + std::to_string(client_timeout_.count()) +
                                                                " ms, so " + what + " could not finish; call again.");
        }
        if (auto error = response->find("error"); error != response->end()) {
            // The client's own words, kept short: they reach the agent.
            std::string message = "no message";
            if (auto m = error->is_object() ? error->find("message") : error->end();
                m != error->end() && m->is_string())
                message = m->get<std::string>().substr(0, 200);
            throw ProtocolError(error_code::internal_error, "The client refused the server's " + a.method + " (" +
                                                                message + "), so " + what + " could not finish.");
        }
        auto result = response->find("result");
        if (result == response->end() || !result->is_object())
            throw ProtocolError(error_code::internal_error,
                                "The client answered the server's " + a.method + " without a result object.");
        responses[a.key] = *result;
    }
    return responses;
}

} // namespace gatehouse::protocol
