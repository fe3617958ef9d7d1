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
                        {"outputSchema", listing.contains("outputSchema") ? listing["outputSchema"] : nullptr},
                        {"scope", tool.scope},
                        {"required_scopes", tool.required_scopes},
                        {"risk", risk_name(tool.risk)},
                        {"platform_version", tool.plugin ? tool.plugin->version() : std::string()}};
    if (!tool.rules.empty()) d["rules"] = tool.rules;
    return d;
}

} // namespace gatehouse::plugins
