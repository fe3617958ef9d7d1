#include "cli/host_setup.hpp"

#include "cli/embedded_config.hpp"
#include "config/config_loader.hpp"
#include "config/install_root.hpp"
#include "metrics/log_context.hpp"
#include "plugins/tool.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#ifndef GATEHOUSE_VERSION
#define GATEHOUSE_VERSION "0.0.0"
#endif

namespace gatehouse::cli {

config::Config load_config(const std::optional<std::string>& file) {
    config::Config cfg =
        file ? config::load_config_file(*file)
             : config::load_config_text(cli::kEmbeddedConfig, "<embedded gatehouse.yaml>", config::install_root());
    fill_host_defaults(cfg);
    return cfg;
}

void fill_host_defaults(config::Config& cfg) {
    if (cfg.plugin_dir.empty()) cfg.plugin_dir = config::install_root() / "lib" / "gatehouse" / "plugins";
    cfg.server.version = GATEHOUSE_VERSION;
}

namespace {

// Text from outside the host as one line of the log: control bytes as '?'.
std::string printable(std::string text) {
    for (auto& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return text;
}

} // namespace

void setup_logging(const std::string& configured_level, const std::string& format) {
    auto logger = spdlog::get("gatehouse");
    if (!logger) logger = spdlog::stderr_color_mt("gatehouse");
    metrics::set_log_format(*logger, format == "json" ? metrics::LogFormat::json : metrics::LogFormat::text);
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(configured_level));
    // spdlog reads a name it does not know as "off": a typo here would
    // silence every error, the one that stops the start included.
    const char* env = std::getenv("GATEHOUSE_LOG");
    if (!env || !*env) return;
    std::string level = env;
    for (auto& c : level)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // spdlog's own spellings of two of them, as it read them before.
    if (level == "warning") level = "warn";
    if (level == "err") level = "error";
    if (config::is_log_level(level)) {
        spdlog::set_level(spdlog::level::from_str(level));
        return;
    }
    // Said even where the configured level hides warnings: the operator
    // asked for a level by name and did not get it.
    const auto configured = spdlog::get_level();
    if (configured > spdlog::level::warn) spdlog::set_level(spdlog::level::warn);
    spdlog::warn("GATEHOUSE_LOG is '{}', not a log level ({}); logging at {}, as the configuration says",
                 printable(level.substr(0, 32)), config::kLogLevelList, configured_level);
    spdlog::set_level(configured);
}

std::unique_ptr<plugins::ToolRegistry> load_plugins(const config::Config& cfg, plugins::LoadReport& report,
                                                    const plugins::LoadOptions& options) {
    auto registry = plugins::PluginLoader::load(cfg, report, options);
    for (const auto& f : registry->families())
        spdlog::info("family '{}' loaded: {} {} from {} ({} tools{}{})", f.family, f.plugin_name, f.version, f.path,
                     f.tools.size(), f.prefix.empty() ? "" : ", prefix '" + f.prefix + "'",
                     f.own_process        ? ", in a process of its own"
                     : f.upstream.empty() ? ""
                                          : ", an upstream speaking " + f.upstream_protocol);
    for (const auto& d : report.disabled)
        spdlog::info("family '{}' from {} is disabled by domains.{}.enabled", d.family, d.path, d.family);
    for (const auto& failure : report.failures)
        spdlog::error("{}: {} not loaded: {}", failure.where.str(), failure.subject(), failure.reason);
    for (const auto& waiting : report.waiting)
        spdlog::warn("{}: {} is not reachable yet: {}; it is tried again, and its tools are served once it answers",
                     waiting.where.str(), waiting.subject(), waiting.reason);
    for (const auto& [family, domain] : cfg.domains) {
        bool present = false;
        for (const auto& f : registry->families())
            present |= f.family == family;
        for (const auto& d : report.disabled)
            present |= d.family == family;
        if (present) continue;
        if (domain.enabled)
            spdlog::warn("{}: domains.{} is enabled but no loaded plugin serves that family", domain.where.str(),
                         family);
        else // a misspelt name would leave the family it meant served
            spdlog::warn("{}: domains.{} disables a family no loaded plugin or upstream has; is it spelled as the "
                         "family is named (or did its plugin fail to load)?",
                         domain.where.str(), family);
    }
    // A limit on a name no tool is published under limits nothing: a typo, or
    // a domain prefix added later, would leave that tool unlimited.
    for (const auto& [tool, _] : cfg.rate_limits.per_tool)
        if (!registry->has_tool(tool) && !plugins::host_tool_name(tool))
            spdlog::warn("rate_limits.per_tool.{} names no tool this host publishes now (with its domain's "
                         "prefix?); it limits nothing",
                         tool);
    return registry;
}

} // namespace gatehouse::cli
