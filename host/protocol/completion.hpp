#pragma once

#include "gate/gate_pipeline.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/request.hpp"

namespace gatehouse::protocol {

// completion/complete: the reference (a prompt by name, or a resource
// template by its uriTemplate) and the argument checked against what was
// declared, then the plugin's complete function, if it has one (none: no
// suggestions). At most 100 values reach the client, with hasMore when more
// were offered.
class Completion {
public:
    Completion(const plugins::LiveRegistry& registry, const gate::GatePipeline& gate)
        : registry_(registry), gate_(gate) {}

    Json run(Request& request) const;

private:
    const plugins::LiveRegistry& registry_;
    const gate::GatePipeline& gate_;
};

} // namespace gatehouse::protocol
