#include "plugins/tool_definition.hpp"

#include "plugins/loaded_plugin.hpp"

namespace gatehouse::plugins {

nlohmann::json tool_definition(const Tool& tool) {
    const auto& listing = tool.listing;
    nlohmann::json d = {{"name", tool.name},
                        {"title", tool.title},
                        {"description", tool.description},
                        {"domain", tool.family},
                        {"inputSchema", listing.at("inputSchema")},
                        // The tool's own result; tools/list publishes it as either that or a refusal.
                        {"outputSchema", tool.output_schema ? tool.output_schema->document() : nullptr},
                        {"scope", tool.scope},
                        {"required_scopes", tool.required_scopes},
                        {"risk", risk_name(tool.risk)},
                        {"platform_version", tool.plugin ? tool.plugin->version() : std::string()}};
    if (!tool.rules.empty()) d["rules"] = tool.rules;
    return d;
}

} // namespace gatehouse::plugins
