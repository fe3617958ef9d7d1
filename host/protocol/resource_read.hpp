#pragma once

#include "gate/gate_pipeline.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/request.hpp"

namespace gatehouse::protocol {

// resources/read: the URI to a resource (exact) or a template (matched, in
// the registry's order), the plugin's read, and its answer checked into a
// ReadResourceResult. An unknown URI is the revision's resource-not-found
// error carrying {"uri"}: -32602 in 2026-07-28, -32002 in 2025-11-25.
class ResourceRead {
public:
    ResourceRead(const plugins::LiveRegistry& registry, const gate::GatePipeline& gate, const InputRounds& input_rounds)
        : registry_(registry), gate_(gate), input_rounds_(input_rounds) {}

    Json run(Request& request) const;

private:
    const plugins::LiveRegistry& registry_;
    const gate::GatePipeline& gate_;
    const InputRounds& input_rounds_;
};

} // namespace gatehouse::protocol
