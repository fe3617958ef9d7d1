#include "cli/family_command.hpp"

#include "cli/host_setup.hpp"
#include "cli/stdout_diversion.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <sstream>

namespace gatehouse::cli {

namespace {

// The host's own verbs win: a family's verb of the same name is never run.
bool host_verb(const std::string& verb) {
    for (const char* own : {"serve", "check-config", "plugins", "license", "docs", "help"})
        if (verb == own) return true;
    return false;
}

// The configuration's families, loaded with whatever they print kept off stdout.
std::unique_ptr<plugins::ToolRegistry> load_families(const config::Config& cfg) {
    plugins::LoadReport report;
    cli::StdoutDiversion plugins_print_to_stderr;
    return load_plugins(cfg, report);
}

// Plugins' shutdown runs here, and may print too.
void unload(std::unique_ptr<plugins::ToolRegistry>& registry) {
    cli::StdoutDiversion plugins_print_to_stderr;
    registry.reset();
}

// `text` folded into lines of at most `width` characters, each after `indent`.
std::string folded(const std::string& text, const std::string& indent, std::size_t width = 78) {
    std::istringstream words(text);
    std::string out, line, word;
    while (words >> word) {
        if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
            out += indent + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) out += indent + line + "\n";
    return out;
}

// The verbs `registry`'s families add, as `gatehouse --help` lists them.
std::string verbs_of(const plugins::ToolRegistry& registry, const std::string& source) {
    std::string listing;
    for (const auto& plugin : registry.plugins())
        for (const auto& command : plugin->commands()) {
            if (host_verb(command.name)) continue;
            listing += "  gatehouse " + command.name + (command.usage.empty() ? "" : " " + command.usage) +
                       " [--config FILE]\n";
            listing += folded(command.summary.empty() ? "A verb of the " + plugin->family() + " family."
                                                      : command.summary + " (" + plugin->family() + " family)",
                              "      ");
        }
    if (listing.empty()) return "\nThe families of " + source + " add no verbs.\n";
    return "\nVerbs of the families in " + source + ":\n" + listing;
}

} // namespace

std::optional<int> run_family_command(const std::string& verb, const std::vector<std::string>& args,
                                      const std::optional<std::string>& config_file, std::string* verbs_when_unknown) {
    if (host_verb(verb)) return std::nullopt;
    const config::Config cfg = load_config(config_file);
    setup_logging("warn");
    auto registry = load_families(cfg);
    for (const auto& plugin : registry->plugins())
        for (const auto& command : plugin->commands()) {
            if (command.name != verb) continue;
            const nlohmann::json context = {
                {"verb", verb}, {"config_file", cfg.source}, {"data_dir", (cfg.data_dir / plugin->family()).string()}};
            std::string out, err;
            const int status = plugin->run_command(command, context.dump(), args, out, err);
            std::cout << out << std::flush;
            std::cerr << err << std::flush;
            unload(registry);
            return status;
        }
    if (verbs_when_unknown) *verbs_when_unknown = verbs_of(*registry, cfg.source);
    unload(registry);
    return std::nullopt;
}

std::string family_commands_help(const std::optional<std::string>& config_file) {
    try {
        const config::Config cfg = load_config(config_file);
        setup_logging("off");
        auto registry = load_families(cfg);
        std::string verbs = verbs_of(*registry, cfg.source);
        unload(registry);
        return verbs;
    } catch (const std::exception&) {
        return "\nFamilies may add verbs of their own; `gatehouse --help --config FILE` lists those of a "
               "configuration that loads.\n";
    }
}

} // namespace gatehouse::cli
