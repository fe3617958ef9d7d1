#include "gate/gate_pipeline.hpp"

namespace gatehouse::gate {

std::optional<Refusal> GatePipeline::check(const GateContext& context) const {
    if (context.tool.gate_exempt) {
        if (!context.tool.plugin) return std::nullopt;
        for (const auto& c : checks_)
            if (c->by_family())
                if (auto refusal = c->check(context)) return refusal;
        return std::nullopt;
    }
    for (const auto& c : checks_)
        if (auto refusal = c->check(context)) return refusal;
    return std::nullopt;
}

std::optional<Refusal> GatePipeline::check_family(const std::string& family, std::string_view what) const {
    for (const auto& c : checks_)
        if (auto refusal = c->check_family(family, what)) return refusal;
    return std::nullopt;
}

} // namespace gatehouse::gate
