#pragma once

#include "mrtr/input_requests.hpp"
#include "mrtr/request_state_sealer.hpp"
#include "protocol/request.hpp"
#include "protocol/request_environment.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

namespace gatehouse::plugins {
class LoadedPlugin;
}

namespace gatehouse::protocol {

// Multi round-trip requests: a tool call, prompt get or resource read whose
// plugin answers GH_STATUS_INPUT_REQUIRED. For 2026-07-28 one request is one
// round: the retry brings params.inputResponses and the sealed
// params.requestState, and an answer that asks again becomes an
// InputRequiredResult. For 2025-11-25 the host itself asks the client
// (elicitation/create, sampling/createMessage, roots/list on the request's
// own channel), waits, and calls the plugin again until it finishes.
class InputRounds {
public:
    InputRounds(std::shared_ptr<const mrtr::RequestStateSealer> sealer, std::chrono::milliseconds client_timeout)
        : sealer_(std::move(sealer)), client_timeout_(client_timeout) {}

    // One call of the plugin function with one round's input: the client's
    // responses (a JSON object) and the plugin's own state from the round before.
    using Attempt = std::function<PluginAnswer(std::string_view input_responses, std::string_view state)>;

    // The plugin's final answer, or for 2026-07-28 the InputRequiredResult to
    // send instead (then `input_required` is an object).
    struct Outcome {
        PluginAnswer answer;
        Json input_required;
    };

    // What a requestState is bound to besides the caller and the method:
    // the tool, prompt or resource URI, and the arguments as the client sent them.
    struct Subject {
        const std::string& target;
        const Json& arguments;
    };

    // Throws ProtocolError: -32602 for a malformed inputResponses or a
    // requestState that does not open for this request, -32021 when the
    // plugin needs a capability the client did not declare, -32603 when the
    // plugin's answer is malformed or a 2025-11-25 client does not answer.
    // `what` names the thing asked for ("tool 'x'"), for messages and the log.
    // `plugin`, when given, hears of a 2025-11-25 round's state it will not
    // get back (the client refused or did not answer, or the rounds ran
    // out: LoadedPlugin::drop_round).
    Outcome run(Request& request, Subject subject, const std::string& family, const std::string& what,
                const Attempt& attempt, plugins::LoadedPlugin* plugin = nullptr) const;

    // A 2026-07-28 round in its two halves, for a plugin that answers later
    // (DeferredAnswer): the round's input (the client's responses, the
    // opened state; the throws are run's), then the plugin's answer made an
    // outcome. `run` is the one followed by the other.
    struct Round {
        std::string responses = "{}";
        std::string state;
    };
    Round open_round(const Request& request, Subject subject) const;
    Outcome close_round(const Request& request, Subject subject, const std::string& family, const std::string& what,
                        PluginAnswer answer) const;

private:
    // Computed only when a state is opened or sealed: most calls never ask.
    static mrtr::StateBinding binding(const Request& request, Subject subject);

    Json ask_client(Request& request, const Json& input_requests, const std::string& what) const;

    std::shared_ptr<const mrtr::RequestStateSealer> sealer_;
    std::chrono::milliseconds client_timeout_;
};

// A plugin's GH_STATUS_INPUT_REQUIRED answer, parsed and checked against
// what the client declared: -32021 (ProtocolError) for a request it cannot
// answer, -32603 for a malformed answer.
mrtr::InputRequired checked_input_required(const Request& request, const PluginAnswer& answer,
                                           const std::string& family, const std::string& what);

} // namespace gatehouse::protocol
