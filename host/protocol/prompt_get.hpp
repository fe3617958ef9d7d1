#pragma once

#include "gate/gate_pipeline.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/request.hpp"

namespace gatehouse::protocol {

// prompts/get: the prompt by name, its arguments checked against what it
// declared (strings only, every required one present, no unknown one), the
// plugin's get, and its answer checked into a GetPromptResult. An unknown
// prompt or a wrong argument is -32602 naming what to fix.
class PromptGet {
public:
    PromptGet(const plugins::LiveRegistry& registry, const gate::GatePipeline& gate, const InputRounds& input_rounds)
        : registry_(registry), gate_(gate), input_rounds_(input_rounds) {}

    Json run(Request& request) const;

private:
    const plugins::LiveRegistry& registry_;
    const gate::GatePipeline& gate_;
    const InputRounds& input_rounds_;
};

} // namespace gatehouse::protocol
