#pragma once

#include "config/config.hpp"
#include "plugins/tool_registry.hpp"

#include <memory>
#include <string>
#include <vector>

namespace gatehouse::plugins {

// One plugin that did not load: the file, and why, in a sentence an operator
// can act on.
struct LoadFailure {
    std::string path;
    std::string reason;
    config::SourceLocation where; // the plugins entry in the config that named it
};

struct DisabledFamily {
    std::string family;
    std::string path;
};

struct LoadReport {
    std::vector<LoadFailure> failures;
    std::vector<DisabledFamily> disabled;
};

// Loads every plugin the config lists, checks each descriptor fully before
// running the plugin's init, and builds the frozen registry from those that
// pass. A plugin that fails is reported and left out; the others are served.
class PluginLoader {
public:
    static std::unique_ptr<ToolRegistry> load(const config::Config& config, LoadReport& report);
};

} // namespace gatehouse::plugins
