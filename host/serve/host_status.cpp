#include "serve/host_status.hpp"

#include "isolation/family_process.hpp"
#include "upstream/upstream_family.hpp"

namespace gatehouse::serve {

using Json = nlohmann::json;

namespace {

const plugins::LoadedPlugin* plugin_of(const plugins::ToolRegistry& registry, const std::string& family) {
    for (const auto& plugin : registry.plugins())
        if (plugin->family() == family) return plugin.get();
    return nullptr;
}

Json family_status(const plugins::FamilyInfo& info, const plugins::LoadedPlugin* plugin) {
    Json out = {{"family", info.family},
                {"tools", info.tools.size()},
                {"resources", info.resources + info.resource_templates},
                {"prompts", info.prompts}};
    bool serving = true;
    if (const auto* upstream = plugin ? plugin->upstream() : nullptr) {
        out["kind"] = "upstream";
        out["reaches"] = info.upstream; // its query left out (upstream::shown_url)
        out["protocol"] = info.upstream_protocol;
        serving = upstream->serving();
        if (!serving) out["why"] = upstream->why_not_serving();
    } else if (const auto* process = plugin ? plugin->process() : nullptr) {
        out["kind"] = "process";
        out["path"] = info.path;
        out["version"] = info.version;
        out["crashes"] = process->crashes();
        serving = process->serving();
        if (!serving) out["why"] = "its process died and is started again after a backoff";
    } else {
        out["kind"] = "plugin";
        out["path"] = info.path;
        out["version"] = info.version;
    }
    out["serving"] = serving;
    return out;
}

} // namespace

Json host_status(const plugins::ToolRegistry& registry, const std::vector<plugins::LoadFailure>& not_loaded) {
    Json families = Json::array();
    for (const auto& info : registry.families())
        families.push_back(family_status(info, plugin_of(registry, info.family)));
    Json failures = Json::array();
    for (const auto& failure : not_loaded)
        failures.push_back({{"what", failure.subject()}, {"where", failure.where.str()}, {"why", failure.reason}});
    return {{"families", std::move(families)}, {"not_loaded", std::move(failures)}};
}

} // namespace gatehouse::serve
