#include "gate/gate_pipeline.hpp"

namespace gatehouse::gate {

std::optional<Refusal> GatePipeline::check(const GateContext& context) const {
    if (context.tool.gate_exempt) return std::nullopt;
    for (const auto& c : checks_)
        if (auto refusal = c->check(context)) return refusal;
    return std::nullopt;
}

} // namespace gatehouse::gate
