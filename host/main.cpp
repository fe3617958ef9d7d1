// gatehouse — an MCP server host that loads tool families from shared
// libraries and gates every call. See `gatehouse --help`.
#include "cli/host_setup.hpp"
#include "cli/family_command.hpp"
#include "cli/license_command.hpp"
#include "cli/reference_docs.hpp"
#include "cli/stdout_diversion.hpp"
#include "config/config_loader.hpp"
#include "config/data_folder.hpp"
#include "gate/gate_pipeline.hpp"
#include "isolation/family_child.hpp"
#include "gate/license_check.hpp"
#include "plugins/plugin_loader.hpp"
#include "plugins/tool.hpp"
#include "limits/argument_bounds.hpp"
#include "mrtr/state_keys.hpp"
#include "serve/host.hpp"
#include "state/state_backend.hpp"
#include "transport/stop_signal.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace gatehouse;

namespace {

constexpr const char* kUsage = R"(gatehouse — an MCP server host with a gate in front of every tool

Usage:
  gatehouse serve [--config FILE] [--transport stdio|http] [--listen HOST:PORT]
      Serve MCP. Without --config the embedded default configuration is used;
      without --transport, the transports the configuration lists (both may
      run at once). --listen sets the HTTP address (default 127.0.0.1:8765).
  gatehouse check-config FILE
      Check a configuration file and report every error, each naming
      FILE:LINE:COLUMN; then load its plugins as serve would (their init
      runs) and report each that does not load, with its path and reason.
      Exits 1 when there is any error.
  gatehouse plugins [--config FILE] [--json]
      Load the configured plugins and list families, tools, scopes, risk,
      rules, the license file that covers each family, and load errors.
  gatehouse license verify FILE [--config FILE] [--json]
      Explain what a license file allows: licensee, families, expiry, and
      whether its signature holds under the configured vendor keys. Exits 1
      when the file is not valid now.
  gatehouse license sign --key PRIVATE.pem --key-id ID --licensee NAME
                         --families a,b --expires YYYY-MM-DDTHH:MM:SSZ [--issued ...]
      For a vendor: print a license file signed with an Ed25519 private key.
  gatehouse docs [--config FILE] --out DIR
      Write one Markdown reference page per domain (DIR/<domain>.md) from the
      loaded registry: every tool's definition with its full schemas.
  gatehouse VERB [ARGS...] [--config FILE]
      A verb a configured family adds, such as the sessions family's `bot`
      (listed below when the configuration loads).
  gatehouse --version
  gatehouse --help

Environment:
  GATEHOUSE_LOG        log level on stderr (trace, debug, info, warn, error, off)
  GATEHOUSE_PRINCIPAL  who calls over stdio (default: the operating-system user)
  GATEHOUSE_DATA_DIR   where families keep their files when the YAML names no data_dir
)";

struct Arguments {
    std::string command;
    std::optional<std::string> config;
    std::optional<std::string> transport;
    std::optional<std::string> listen;
    std::optional<std::string> out; // docs: the folder pages go to
    std::vector<std::string> positional;
    std::map<std::string, std::string> license_options; // license sign's --flags
    bool json = false;
};

// The flags of `license sign`, each with a value.
const std::set<std::string> kLicenseSignFlags{"--key", "--key-id", "--licensee", "--families", "--expires", "--issued"};

// Returns nullopt (after printing why) when the command line is wrong.
std::optional<Arguments> parse_arguments(int argc, char** argv) {
    Arguments a;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&](const char* flag) -> std::optional<std::string> {
            if (i + 1 >= argc) {
                std::cerr << "gatehouse: " << flag << " needs a value\n";
                return std::nullopt;
            }
            return std::string(argv[++i]);
        };
        if (arg == "--config") {
            if (!(a.config = value("--config"))) return std::nullopt;
        } else if (arg.rfind("--config=", 0) == 0) {
            a.config = arg.substr(9);
        } else if (arg == "--transport") {
            if (!(a.transport = value("--transport"))) return std::nullopt;
        } else if (arg.rfind("--transport=", 0) == 0) {
            a.transport = arg.substr(12);
        } else if (arg == "--listen") {
            if (!(a.listen = value("--listen"))) return std::nullopt;
        } else if (arg.rfind("--listen=", 0) == 0) {
            a.listen = arg.substr(9);
        } else if (arg == "--out") {
            if (!(a.out = value("--out"))) return std::nullopt;
        } else if (kLicenseSignFlags.count(arg)) {
            auto v = value(arg.c_str());
            if (!v) return std::nullopt;
            a.license_options[arg] = *v;
        } else if (arg == "--json") {
            a.json = true;
        } else if (arg == "--help" || arg == "-h" || arg == "--version") {
            a.command = arg;
        } else if (!arg.empty() && arg[0] == '-') {
            std::cerr << "gatehouse: unknown option " << arg << "\n" << kUsage;
            return std::nullopt;
        } else if (a.command.empty()) {
            a.command = arg;
        } else {
            a.positional.push_back(arg);
        }
    }
    return a;
}

int serve_host(const Arguments& args) {
    // First, before any thread starts (plugins may start their own): every
    // thread inherits the blocked stop and reload signals, and one thread
    // waits for them. SIGHUP re-reads the YAML (serve::Host::reload).
    // A re-read runs whole or not at all: the host is not torn down under
    // it, and it does not start on a host being torn down.
    // A SIGHUP while the host is still being made is kept, and runs once it
    // serves: the edit it announced may have come after the first reading.
    std::mutex reloading;
    serve::Host* reloadable = nullptr;
    bool reload_while_starting = false;
    transport::StopSignal stop([&reloading, &reloadable, &reload_while_starting, &args] {
        std::lock_guard lock(reloading);
        if (reloadable) {
            reloadable->reload(cli::load_config(args.config));
        } else {
            reload_while_starting = true;
            spdlog::info("the host is still starting: the configuration is re-read once it serves");
        }
    });
    config::Config cfg = cli::load_config(args.config);
    cli::setup_logging(cfg.log_level, cfg.log_format);
    try {
        config::prepare_data_folder(cfg.data_dir);
    } catch (const config::DataFolderUnsafe& e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
    std::vector<std::string> transports = cfg.transports;
    if (args.transport) {
        if (*args.transport != "stdio" && *args.transport != "http") {
            spdlog::critical("unknown transport '{}' (available: stdio, http)", *args.transport);
            return 2;
        }
        transports = {*args.transport};
    }
    const auto serves = [&](const char* name) {
        return std::find(transports.begin(), transports.end(), name) != transports.end();
    };
    if (args.listen) {
        try {
            config::apply_listen(cfg.http, *args.listen);
        } catch (const std::invalid_argument& e) {
            spdlog::critical("--listen: {}", e.what());
            return 2;
        }
    }
    std::unique_ptr<serve::Host> host;
    try {
        host = std::make_unique<serve::Host>(std::move(cfg), serve::Transports{serves("stdio"), serves("http")});
    } catch (const serve::HostError& e) {
        spdlog::critical("{}", e.what());
        return e.status();
    }
    int status = 0;
    {
        // Cleared however run() ends, before the host is torn down.
        struct Reloadable {
            std::mutex& reloading;
            serve::Host*& host;
            Reloadable(std::mutex& reloading, serve::Host*& host, serve::Host* serving, bool& missed,
                       transport::StopSignal& stop)
                : reloading(reloading), host(host) {
                bool ask = false;
                {
                    std::lock_guard lock(reloading);
                    host = serving;
                    ask = std::exchange(missed, false);
                }
                if (ask) stop.ask_reload();
            }
            ~Reloadable() {
                std::lock_guard lock(reloading);
                host = nullptr;
            }
        } reloadable_while_serving(reloading, reloadable, host.get(), reload_while_starting, stop);
        status = host->run(stop);
    }
    // Workers finish (or notice their cancellation) before any transport
    // state they answer through goes away. Cancelled calls return quickly
    // from a plugin that polls is_cancelled; one that ignores it cannot be
    // joined, and unloading the plugin (or running static destructors) under
    // that thread would crash: every answer has been written, so leave at once.
    if (!host->stop_workers(std::chrono::seconds(5))) {
        spdlog::error("a tool call is still running inside its plugin 5 s after cancellation (it ignores "
                      "is_cancelled); exiting without unloading the plugins (their shutdown does not run)");
        host->flush_audit();
        spdlog::default_logger()->flush();
        std::fflush(stderr);
        std::_Exit(status);
    }
    return status;
}

// Every mistake in one run: the YAML's, then (when the YAML holds none) each
// plugin that does not load as serve would load it, init included.
int check_config(const Arguments& args) {
    if (args.positional.size() + (args.config ? 1 : 0) != 1) {
        std::cerr << "gatehouse: check-config needs exactly one FILE\n";
        return 2;
    }
    const std::string file = args.config ? *args.config : args.positional[0];
    config::ConfigReading reading = config::read_config_file(file);
    std::vector<config::ConfigProblem> problems = std::move(reading.problems);
    config::Config& cfg = reading.config;
    cli::fill_host_defaults(cfg);
    if (reading.parsed && !problems.empty()) {
        // Plugins are not loaded under a config with mistakes (their settings
        // may be among them), but a missing file is worth saying now.
        for (const auto& entry : cfg.plugins) {
            const auto path = plugins::resolve_plugin_path(entry, cfg);
            std::error_code ec;
            if (!std::filesystem::exists(path, ec))
                problems.push_back({entry.where, "plugin " + path.string() + " does not load: file not found"});
        }
    } else if (reading.parsed) {
        cli::setup_logging("off");
        plugins::LoadReport report;
        std::unique_ptr<plugins::ToolRegistry> registry;
        {
            cli::StdoutDiversion plugins_print_to_stderr;
            registry = plugins::PluginLoader::load(cfg, report);
        }
        for (const auto& failure : report.failures)
            problems.push_back({failure.where, failure.subject() + " does not load: " + failure.reason});
        if (report.failures.empty())
            for (const auto& [family, domain] : cfg.domains) {
                if (domain.tools.empty() || !domain.enabled) continue;
                bool served = false;
                for (const auto& f : registry->families())
                    served |= f.family == family;
                if (!served)
                    problems.push_back({domain.where, "domains." + family +
                                                          ".tools: no plugin under plugins serves the " + family +
                                                          " family, so these tool settings apply to nothing"});
            }
        // A limit on a name no tool is published under limits nothing (serve
        // warns of it). Not known while an upstream is unreachable: its tools
        // are not listed yet.
        if (report.failures.empty() && report.waiting.empty())
            for (const auto& [tool, limit] : cfg.rate_limits.per_tool)
                if (!registry->has_tool(tool) && !plugins::host_tool_name(tool))
                    problems.push_back({limit.where, "rate_limits.per_tool." + tool +
                                                         " names no tool this configuration publishes (with its "
                                                         "domain's prefix?), so it would limit nothing"});
        cli::StdoutDiversion plugins_print_to_stderr;
        registry.reset();
    }
    std::stable_sort(problems.begin(), problems.end(), [](const auto& a, const auto& b) {
        return std::pair(a.where.line, a.where.column) < std::pair(b.where.line, b.where.column);
    });
    for (const auto& problem : problems)
        std::cerr << problem.str() << "\n";
    if (!problems.empty()) {
        std::cerr << file << ": " << problems.size() << " error(s)\n";
        return 1;
    }
    std::cout << file << ": OK (" << cfg.plugins.size() << " plugin(s), " << cfg.domains.size()
              << " domain setting(s))\n";
    return 0;
}

// What one family offers of a list (resources, templates, prompts), by the
// key a client uses for it: URI, URI template or name.
template <class Item> nlohmann::json offered_by(const std::string& family, const std::vector<const Item*>& items) {
    nlohmann::json out = nlohmann::json::array();
    for (const Item* item : items) {
        if (item->family != family) continue;
        const auto& l = item->listing;
        out.push_back(l.contains("uri") ? l["uri"] : l.contains("uriTemplate") ? l["uriTemplate"] : l["name"]);
    }
    return out;
}

int list_plugins(const Arguments& args) {
    config::Config cfg = cli::load_config(args.config);
    cli::setup_logging(args.json ? "off" : "warn");
    plugins::LoadReport report;
    std::unique_ptr<plugins::ToolRegistry> registry;
    {
        cli::StdoutDiversion plugins_print_to_stderr;
        registry = cli::load_plugins(cfg, report);
    }
    // Which license file covers each family, decided as the gate would now.
    std::optional<gate::LicenseCheck> licenses;
    if (cfg.license.configured) licenses.emplace(cfg.license);
    const auto license_of = [&](const std::string& family) {
        return licenses ? licenses->coverage(family) : nlohmann::json{{"license", "unchecked"}};
    };
    if (args.json) {
        nlohmann::json out = {{"families", nlohmann::json::array()},
                              {"failures", nlohmann::json::array()},
                              {"disabled", nlohmann::json::array()}};
        for (const auto& f : registry->families()) {
            nlohmann::json tools = nlohmann::json::array();
            for (const auto* t : f.tools)
                tools.push_back({{"name", t->name},
                                 {"scope", t->scope},
                                 {"required_scopes", t->required_scopes},
                                 {"risk", plugins::risk_name(t->risk)},
                                 {"rules", !t->rules.empty()},
                                 {"gate_exempt", t->gate_exempt},
                                 {"reads_critical", t->reads_critical}});
            out["families"].push_back(
                {{"family", f.family},
                 {"plugin", f.plugin_name},
                 {"version", f.version},
                 {"path", f.path},
                 {"prefix", f.prefix},
                 {"reentrant", f.reentrant},
                 {"store_credentials", f.store_credentials},
                 {"isolation", f.own_process ? "process" : "in_process"},
                 {"upstream", f.upstream.empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json{{"reaches", f.upstream}, {"protocol", f.upstream_protocol}}},
                 {"rules", !f.rules.empty()},
                 {"tools", tools},
                 {"resources", offered_by(f.family, registry->resources())},
                 {"resource_templates", offered_by(f.family, registry->resource_templates())},
                 {"prompts", offered_by(f.family, registry->prompts())},
                 {"license", license_of(f.family)}});
        }
        for (const auto& x : report.failures)
            out["failures"].push_back({{"path", x.path}, {"reason", x.reason}, {"listed_at", x.where.str()}});
        for (const auto& d : report.disabled)
            out["disabled"].push_back({{"family", d.family}, {"path", d.path}});
        std::cout << out.dump(2) << "\n";
    } else {
        for (const auto& f : registry->families()) {
            std::cout << "family " << f.family << "  (" << f.plugin_name << " " << f.version << ", " << f.path
                      << (f.reentrant ? ", reentrant" : ", serialized") << (f.rules.empty() ? "" : ", has rules")
                      << (f.store_credentials ? ", store_credentials allowed" : "")
                      << (f.own_process ? ", isolation: process" : "")
                      << (f.upstream.empty() ? "" : ", upstream speaking " + f.upstream_protocol) << ")\n";
            if (licenses) {
                const auto license = license_of(f.family);
                std::cout << "  license " << license["license"].get<std::string>();
                if (license.contains("file")) std::cout << "  " << license["file"].get<std::string>();
                if (license.contains("expires")) std::cout << "  expires " << license["expires"].get<std::string>();
                std::cout << "\n";
            }
            for (const auto* t : f.tools) {
                std::string scopes;
                for (const auto& s : t->required_scopes)
                    scopes += (scopes.empty() ? "" : ",") + s;
                std::printf("  %-32s risk=%-11s scope=%-12s grants=%-16s%s%s%s\n", t->name.c_str(),
                            plugins::risk_name(t->risk), t->scope.empty() ? "-" : t->scope.c_str(),
                            scopes.empty() ? "-" : scopes.c_str(), t->rules.empty() ? "" : " rules",
                            t->gate_exempt ? " gate-exempt" : "",
                            // it shows critical notes, so it runs while they are unread
                            t->reads_critical ? " reads-critical" : "");
            }
            for (const auto& uri : offered_by(f.family, registry->resources()))
                std::cout << "  resource " << uri.get<std::string>() << "\n";
            for (const auto& uri_template : offered_by(f.family, registry->resource_templates()))
                std::cout << "  resource template " << uri_template.get<std::string>() << "\n";
            for (const auto& name : offered_by(f.family, registry->prompts()))
                std::cout << "  prompt " << name.get<std::string>() << "\n";
        }
        for (const auto& d : report.disabled)
            std::cout << "disabled " << d.family << "  (" << d.path << ")\n";
        for (const auto& x : report.failures)
            std::cout << "FAILED  " << x.path << ": " << x.reason << "\n";
    }
    {
        // Plugins' shutdown runs here, and may print too.
        cli::StdoutDiversion plugins_print_to_stderr;
        registry.reset();
    }
    return report.failures.empty() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    // A reader that goes away mid-write (a family's process on its pipe, an
    // upstream's stdin, a client's socket) is an error the writer sees
    // (EPIPE), never the end of this process: every verb may start a family
    // with isolation: process.
    std::signal(SIGPIPE, SIG_IGN);
    state::take_sqlite_pages_as_needed();
    // A family's own process (isolation: process), started by a host.
    if (argc > 1 && std::string_view(argv[1]) == "serve-family") return isolation::serve_family(argc, argv);
    auto args = parse_arguments(argc, argv);
    if (!args) return 2;
    try {
        if (args->command.empty() || args->command == "--help" || args->command == "-h" || args->command == "help") {
            std::cout << kUsage;
            if (args->command.empty()) return 2;
            std::cout << cli::family_commands_help(args->config);
            return 0;
        }
        if (args->command == "--version") {
            std::cout << "gatehouse " << GATEHOUSE_VERSION << " (plugin ABI " << GH_ABI_VERSION_MAJOR << "."
                      << GH_ABI_VERSION_MINOR << ")\n";
            return 0;
        }
        if (args->command == "serve" || args->command == "plugins" || args->command == "docs")
            if (!args->positional.empty()) {
                // `serve prod.yaml` would serve the embedded default without a word.
                std::cerr << "gatehouse: " << args->command << " takes no FILE ('" << args->positional.front()
                          << "'); did you mean --config " << args->positional.front() << "?\n";
                return 2;
            }
        if (args->command == "serve") return serve_host(*args);
        if (args->command == "check-config") return check_config(*args);
        if (args->command == "plugins") return list_plugins(*args);
        if (args->command == "docs") return cli::reference_docs_command(args->config, args->out);
        if (args->command == "license")
            return cli::license_command(args->positional, args->config, args->license_options, args->json);
        // The verbs the families add go with the usage: a mistyped one is
        // most often one of theirs.
        std::string family_verbs;
        if (auto status = cli::run_family_command(args->command, args->positional, args->config, &family_verbs))
            return *status;
        std::cerr << "gatehouse: unknown command '" << args->command << "'\n" << kUsage << family_verbs;
        return 2;
    } catch (const config::ConfigError& e) {
        std::cerr << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "gatehouse: " << e.what() << "\n";
        return 1;
    }
}
