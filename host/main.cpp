// gatehouse — an MCP server host that loads tool families from shared
// libraries and gates every call. See `gatehouse --help`.
#include "cli/host_setup.hpp"
#include "cli/license_command.hpp"
#include "cli/stdout_diversion.hpp"
#include "config/config_loader.hpp"
#include "gate/gate_pipeline.hpp"
#include "gate/license_check.hpp"
#include "gate/no_sessions_check.hpp"
#include "gate/session_gate.hpp"
#include "protocol/mcp_server.hpp"
#include "transport/stdio_transport.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace gatehouse;

namespace {

constexpr const char* kUsage = R"(gatehouse — an MCP server host with a gate in front of every tool

Usage:
  gatehouse serve [--config FILE] [--transport stdio]
      Serve MCP. Without --config the embedded default configuration is used.
  gatehouse check-config FILE
      Check a configuration file; errors name FILE:LINE:COLUMN.
  gatehouse plugins [--config FILE] [--json]
      Load the configured plugins and list families, tools, scopes, risk,
      rules and load errors.
  gatehouse license verify FILE [--config FILE] [--json]
      Explain what a license file allows: licensee, families, expiry, and
      whether its signature holds under the configured vendor keys. Exits 1
      when the file is not valid now.
  gatehouse license sign --key PRIVATE.pem --key-id ID --licensee NAME
                         --families a,b --expires YYYY-MM-DDTHH:MM:SSZ [--issued ...]
      For a vendor: print a license file signed with an Ed25519 private key.
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

int serve(const Arguments& args) {
    config::Config cfg = cli::load_config(args.config);
    cli::setup_logging(cfg.log_level);
    const std::string transport = args.transport.value_or(cfg.transports.empty() ? "stdio" : cfg.transports[0]);
    if (transport != "stdio") {
        spdlog::critical("unknown transport '{}' (available: stdio)", transport);
        return 2;
    }
    plugins::LoadReport report;
    std::unique_ptr<plugins::ToolRegistry> registry;
    {
        cli::StdoutDiversion plugins_print_to_stderr;
        registry = cli::load_plugins(cfg, report);
    }
    if (cfg.strict && !report.failures.empty()) {
        spdlog::critical("{} plugin(s) failed to load and the configuration is strict; not serving",
                         report.failures.size());
        return 1;
    }
    gate::GatePipeline gate;
    gate::add_license_check(gate, cfg.license);
    std::unique_ptr<session::SessionService> sessions;
    if (cfg.session.configured) {
        auto backend = cfg.session.backend == "memory" ? state::make_memory_backend()
                                                       : state::make_sqlite_backend(cfg.session.state_file.string());
        sessions = std::make_unique<session::SessionService>(cfg.session, std::move(backend), *registry);
        gate::add_session_checks(gate, *sessions);
        spdlog::info("sessions: {} backend, {} store", sessions->table().backend_name(),
                     cfg.session.pinned() ? "pinned" : "program-chosen");
    } else if (cfg.gate) {
        // No session can ever open here, so every gated tool is refused rather
        // than served unchecked; session-exempt tools still run.
        gate.add(std::make_unique<gate::NoSessionsCheck>());
        spdlog::warn("the configuration has no session section: no session can open, so gated tools are refused "
                     "with NOT_CONNECTED (gate: false serves them unchecked, for testing a plugin)");
    } else {
        spdlog::warn("gate: false — gated tools run WITHOUT the gate's checks; never use this in production");
    }
    protocol::RequestPool pool(cfg.limits.workers);
    protocol::McpServer server(*registry, gate, cfg.server, cfg.limits, pool);
    transport::StdioTransport stdio(server, cfg.limits.max_message_bytes);
    return stdio.run(pool);
}

int check_config(const Arguments& args) {
    if (args.positional.size() != 1 && !args.config) {
        std::cerr << "gatehouse: check-config needs exactly one FILE\n";
        return 2;
    }
    const std::string file = args.config ? *args.config : args.positional[0];
    config::Config cfg = config::load_config_file(file);
    std::cout << file << ": OK (" << cfg.plugins.size() << " plugin(s), " << cfg.domains.size()
              << " domain setting(s))\n";
    return 0;
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
                                 {"gate_exempt", t->gate_exempt}});
            out["families"].push_back({{"family", f.family},
                                       {"plugin", f.plugin_name},
                                       {"version", f.version},
                                       {"path", f.path},
                                       {"prefix", f.prefix},
                                       {"reentrant", f.reentrant},
                                       {"rules", !f.rules.empty()},
                                       {"tools", tools}});
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
                      << ")\n";
            for (const auto* t : f.tools) {
                std::string scopes;
                for (const auto& s : t->required_scopes)
                    scopes += (scopes.empty() ? "" : ",") + s;
                std::printf("  %-32s risk=%-11s scope=%-12s grants=%-16s%s%s\n", t->name.c_str(),
                            plugins::risk_name(t->risk), t->scope.empty() ? "-" : t->scope.c_str(),
                            scopes.empty() ? "-" : scopes.c_str(), t->rules.empty() ? "" : " rules",
                            t->gate_exempt ? " gate-exempt" : "");
            }
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
    auto args = parse_arguments(argc, argv);
    if (!args) return 2;
    try {
        if (args->command.empty() || args->command == "--help" || args->command == "-h" || args->command == "help") {
            std::cout << kUsage;
            return args->command.empty() ? 2 : 0;
        }
        if (args->command == "--version") {
            std::cout << "gatehouse " << GATEHOUSE_VERSION << " (plugin ABI " << GH_ABI_VERSION_MAJOR << "."
                      << GH_ABI_VERSION_MINOR << ")\n";
            return 0;
        }
        if (args->command == "serve") return serve(*args);
        if (args->command == "check-config") return check_config(*args);
        if (args->command == "plugins") return list_plugins(*args);
        if (args->command == "license")
            return cli::license_command(args->positional, args->config, args->license_options, args->json);
        std::cerr << "gatehouse: unknown command '" << args->command << "'\n" << kUsage;
        return 2;
    } catch (const config::ConfigError& e) {
        std::cerr << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "gatehouse: " << e.what() << "\n";
        return 1;
    }
}
