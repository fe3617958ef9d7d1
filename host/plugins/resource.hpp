#pragma once

#include "plugins/uri_template.hpp"

#include <gatehouse/plugin.h>
#include <nlohmann/json.hpp>

#include <string>

namespace gatehouse::plugins {

class LoadedPlugin;

// A resource with a fixed URI, checked at load time (ABI 1.2).
struct Resource {
    std::string uri;
    std::string family;
    gh_resource_read_fn read = nullptr;
    void* data = nullptr;
    LoadedPlugin* plugin = nullptr;

    // The MCP Resource object as resources/list publishes it, built once.
    nlohmann::json listing;
};

// A template naming many resources; the host matches URIs against it.
struct ResourceTemplate {
    UriTemplate uri_template;
    std::string family;
    gh_resource_read_fn read = nullptr;
    gh_complete_fn complete = nullptr; // null: no suggestions for its variables
    void* data = nullptr;
    LoadedPlugin* plugin = nullptr;

    // The MCP ResourceTemplate object as resources/templates/list publishes it.
    nlohmann::json listing;
};

} // namespace gatehouse::plugins
