#include "plugins/tool_overrides.hpp"

#include "plugins/tool_listing.hpp"

#include <algorithm>

namespace gatehouse::plugins {

namespace {

Risk risk_named(const std::string& name) {
    if (name == "write") return Risk::write;
    if (name == "money") return Risk::money;
    if (name == "destructive") return Risk::destructive;
    return Risk::read; // the config loader admits only the four names
}

// The hints MCP clients read follow the risk the operator set, whatever the
// plugin declared for the risk it had.
void annotate_risk(nlohmann::json& annotations, Risk risk) {
    annotations["readOnlyHint"] = risk == Risk::read;
    if (risk == Risk::read)
        annotations.erase("destructiveHint");
    else
        annotations["destructiveHint"] = risk == Risk::destructive;
}

} // namespace

void apply_tool_overrides(const config::DomainSettings& domain, const std::string& family,
                          std::vector<std::unique_ptr<Tool>>& tools, bool sessions) {
    std::vector<config::ConfigProblem> unknown;
    for (const auto& entry : domain.tools) {
        // Named, not a structured binding: clang 14 (the fuzz build) cannot capture one.
        const std::string& name = entry.first;
        const auto& change = entry.second;
        auto it = std::find_if(tools.begin(), tools.end(), [&](const auto& t) { return t->plugin_name == name; });
        if (it == tools.end()) {
            std::string declared;
            for (const auto& t : tools)
                declared += (declared.empty() ? "" : ", ") + t->plugin_name;
            unknown.push_back({change.where, "domains." + family + ".tools names '" + name + "', but the " + family +
                                                 " family declares no such tool (its tools: " +
                                                 (declared.empty() ? "none" : declared) + ")"});
            continue;
        }
        Tool& tool = **it;
        if (change.rules) tool.rules = *change.rules;
        if (change.risk) {
            tool.risk = risk_named(*change.risk);
            annotate_risk(tool.annotations, tool.risk);
        }
        if (change.scope) tool.scope = *change.scope;
        if (change.required_scopes) tool.required_scopes = *change.required_scopes;
        if (change.gated) tool.gate_exempt = !*change.gated;
        publish_listing(tool, sessions);
    }
    if (!unknown.empty()) throw config::ConfigError(std::move(unknown));
}

} // namespace gatehouse::plugins
