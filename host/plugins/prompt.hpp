#pragma once

#include <gatehouse/plugin.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gatehouse::plugins {

class LoadedPlugin;

struct PromptArgument {
    std::string name;
    bool required = false;
};

// A prompt as the host knows it, checked at load time (ABI 1.2).
struct Prompt {
    std::string name;        // the published name (family prefix + the plugin's own name)
    std::string plugin_name; // the name the plugin declared
    std::string family;
    std::vector<PromptArgument> arguments;
    gh_prompt_get_fn get = nullptr;
    gh_complete_fn complete = nullptr; // null: no suggestions for its arguments
    void* data = nullptr;
    LoadedPlugin* plugin = nullptr;

    // The MCP Prompt object as prompts/list publishes it, built once.
    nlohmann::json listing;

    const PromptArgument* argument(const std::string& argument_name) const {
        for (const auto& a : arguments)
            if (a.name == argument_name) return &a;
        return nullptr;
    }
};

} // namespace gatehouse::plugins
