#pragma once

#include "schema/json_schema.hpp"

#include <gatehouse/plugin.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gatehouse::plugins {

class LoadedPlugin;

enum class Risk { read, write, money, destructive };

const char* risk_name(Risk risk);

// One tool as the host knows it: the plugin's declaration, checked and
// compiled at load time, plus how to reach the plugin.
struct Tool {
    std::string name;        // the published name (family prefix + the plugin's own name)
    std::string plugin_name; // the name the plugin declared
    std::string family;
    std::string title;
    std::string description;
    std::shared_ptr<const schema::JsonSchema> input_schema;
    std::shared_ptr<const schema::JsonSchema> output_schema; // null when the tool declares none
    nlohmann::json annotations;                              // object, possibly empty
    std::string scope;
    std::vector<std::string> required_scopes;
    Risk risk = Risk::read;
    std::string rules;
    bool gate_exempt = false;
    bool reads_critical = false; // runs while critical notes are unread (GH_TOOL_READS_CRITICAL)

    gh_tool_fn call = nullptr;
    void* tool_data = nullptr;
    LoadedPlugin* plugin = nullptr;

    // The MCP Tool object as tools/list publishes it, built once.
    nlohmann::json listing;
};

} // namespace gatehouse::plugins
