#pragma once

#include "config/config.hpp"
#include "plugins/plugin_loader.hpp"

#include <memory>
#include <optional>
#include <string>

namespace gatehouse::cli {

// The config a command runs on: the named file, or the embedded default.
// Fills what the YAML left to the host (plugin_dir, server version).
config::Config load_config(const std::optional<std::string>& file);

// What the host fills in that the YAML left out: plugin_dir, server version.
void fill_host_defaults(config::Config& config);

// Sets up spdlog on stderr. GATEHOUSE_LOG overrides the configured level.
// `format`: text | json (log_format), the lines of a request naming its trace.
void setup_logging(const std::string& configured_level, const std::string& format = "text");

// Loads the plugins and writes the start-up report to the log.
std::unique_ptr<plugins::ToolRegistry> load_plugins(const config::Config& config, plugins::LoadReport& report,
                                                    const plugins::LoadOptions& options = {});

} // namespace gatehouse::cli
