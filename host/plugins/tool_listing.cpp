#include "plugins/tool_listing.hpp"

#include "gate/refusal.hpp"

#include <algorithm>

namespace gatehouse::plugins {

namespace {

// A gated tool carries the session handle as an ordinary argument; the host
// checks and strips it, so only the published schema shows it.
void publish_session_argument(nlohmann::json& input_schema) {
    input_schema["properties"]["session"] = {{"type", "string"},
                                             {"description", "The session handle session_connect returned."}};
    auto& required = input_schema["required"];
    if (!required.is_array()) required = nlohmann::json::array();
    // Once: a schema's "required" holds each name once (a plugin that lists
    // "session" itself would otherwise publish it twice, which strict
    // clients refuse).
    if (std::find(required.begin(), required.end(), "session") == required.end()) required.push_back("session");
}

} // namespace

void publish_listing(Tool& tool, bool sessions) {
    nlohmann::json l;
    l["name"] = tool.name;
    if (!tool.title.empty()) l["title"] = tool.title;
    if (!tool.description.empty()) l["description"] = tool.description;
    l["inputSchema"] = tool.input_schema->document();
    if (sessions && !tool.gate_exempt) publish_session_argument(l["inputSchema"]);
    if (tool.output_schema) l["outputSchema"] = gate::published_output_schema(tool.output_schema->document());
    l["annotations"] = tool.annotations;
    l["_meta"] = {{"dev.gatehouse/risk", risk_name(tool.risk)}, {"dev.gatehouse/requiredScopes", tool.required_scopes}};
    if (!tool.scope.empty()) l["_meta"]["dev.gatehouse/scope"] = tool.scope;
    if (!tool.rules.empty()) l["_meta"]["dev.gatehouse/hasRules"] = true;
    tool.listing = std::move(l);
}

} // namespace gatehouse::plugins
