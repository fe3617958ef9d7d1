#pragma once

#include "gate/gate_pipeline.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/loaded_plugin.hpp"
#include "protocol/request.hpp"

#include <string>

namespace gatehouse::protocol {

// What a plugin reaches of a resources/read, prompts/get or completion/complete
// request through the host function table: log and progress notifications,
// cancellation, and the call context {"principal", "revision",
// "clientCapabilities", "family", "method", plus what is being asked for}. No
// session services: these requests do not pass the gate
// (docs/plugin-abi.md). A tool call's environment builds on it.
class RequestEnvironment : public plugins::CallEnvironment {
public:
    RequestEnvironment(Request& request, std::string family, Json subject);

    bool cancelled() const override;
    void log(int32_t level, std::string_view logger, std::string_view message) override;
    void progress(double done, double total, std::string_view message) override;
    // Built on the first ask: most calls never ask.
    std::string_view context_json() final;
    const Json* client_capabilities() const final { return &request_.client_capabilities; }
    std::string owner() const final;
    const metrics::TraceContext* trace() const final { return &request_.trace; }

protected:
    // The context's fields besides principal, revision and clientCapabilities.
    virtual void describe(Json& context) const;

    Request& request_;
    const std::string family_;

private:
    Json subject_;
    std::string context_;
};

// What one plugin function answered: its status and the bytes it wrote.
struct PluginAnswer {
    int32_t status = GH_STATUS_INTERNAL;
    std::string text;
    std::optional<nlohmann::json> value; // in place of text: gh_sink::value
};

// Before a family's resource, prompt or completion runs: the gate's checks by
// family (the license) refuse it as a JSON-RPC error carrying the refusal's
// {code, next}; `what` names it ("Resource 'x'").
void check_family(const gate::GatePipeline& gate, const std::string& family, std::string_view what);

// Runs fn(plugin_state, gh_call*, gh_sink*) in `plugin` for this request,
// under the plugin's threading contract.
// `input_responses` and `state` are the round's input of a multi round-trip
// request (api->input_responses, api->request_state).
template <class Fn>
PluginAnswer call_plugin(Request& request, plugins::LoadedPlugin& plugin, const std::string& family, Json subject,
                         Fn&& fn, std::string_view input_responses = "{}", std::string_view state = {}) {
    RequestEnvironment environment(request, family, std::move(subject));
    gh_call call{&environment, family, {}, input_responses, state, request.host};
    gh_sink out;
    PluginAnswer answer;
    answer.status = plugin.run([&](void* state) { return fn(state, &call, &out); });
    answer.text = std::move(out.bytes);
    return answer;
}

// The JSON object a plugin answered with GH_STATUS_OK. Any other status, or
// an answer that is not a JSON object, becomes the ProtocolError the client
// sees: the plugin's sentence for INVALID_ARGS (-32602) and TOOL_ERROR
// (-32603); a generic sentence for a fault, whose details go to the log only.
// `what` names the thing asked for ("resource 'test://x'", "prompt 'p'").
Json plugin_result(const PluginAnswer& answer, const std::string& family, const std::string& what);

// The host's sentence for a plugin answer it cannot use, logged with the details.
[[noreturn]] void plugin_fault(const std::string& family, const std::string& what, const std::string& detail);

} // namespace gatehouse::protocol
