#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "plugins/tool_listing.hpp"
#include "schema/json_schema.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <vector>

using gatehouse::config::Config;
using gatehouse::plugins::LoadFailure;
using gatehouse::plugins::LoadReport;
using gatehouse::plugins::PluginLoader;
using gatehouse::plugins::ToolRegistry;
using gatehouse::test::plugin_dir;
using gatehouse::test::TempDir;

namespace {

// Config text with plugin_dir pointing at the fixtures; `rest` adds plugins:
// and domains:.
Config fixture_config(const std::string& rest) {
    return gatehouse::config::load_config_text("plugin_dir: " + plugin_dir().string() + "\n" + rest, "test.yaml",
                                               plugin_dir());
}

struct Loaded {
    std::unique_ptr<ToolRegistry> registry;
    LoadReport report;

    bool serves_family(const std::string& family) const {
        const auto& f = registry->families();
        return std::any_of(f.begin(), f.end(), [&](const auto& info) { return info.family == family; });
    }

    const LoadFailure* failure_of(const std::string& file) const {
        for (const auto& x : report.failures)
            if (x.path == (plugin_dir() / file).string()) return &x;
        return nullptr;
    }
};

Loaded load(const std::string& rest) {
    Loaded out;
    out.registry = PluginLoader::load(fixture_config(rest), out.report);
    return out;
}

} // namespace

TEST_CASE("each broken plugin is refused with its path and reason while the good ones load", "[loader]") {
    struct Case {
        const char* file;
        std::vector<const char*> words; // all must appear in the reason
    };
    const std::vector<Case> cases = {
        {"missing.so", {"file not found"}},
        {"broken_not_a_library.so", {"not a shared library"}},
        {"broken_no_entry_symbol.so", {"missing entry symbol", "gh_plugin_entry"}},
        {"broken_abi_major_two.so", {"ABI version mismatch", "ABI 2.3", "ABI 1."}},
        {"broken_unknown_plugin_flags.so", {"descriptor sets unknown flag bits 0x100"}},
        {"broken_unknown_tool_flags.so", {"tool 'toolflags_ping' sets unknown flag bits 0x80000000"}},
        {"broken_bad_task_support.so", {"tool 'tasksupport_ping' declares task_support 7", "0 none, 1 optional"}},
        {"broken_asks_before_no_task.so", {"tool 'askfirst_ping' sets GH_TOOL_ASKS_BEFORE_TASK", "no task_support"}},
        {"broken_wide_tail_nonzero.so", {"descriptor", "struct_size", "does not know"}},
        {"broken_narrow_struct.so", {"descriptor", "smaller than the smallest published size"}},
        {"broken_between_sizes.so", {"descriptor", "is none of the published sizes", "it would end inside a field"}},
        {"broken_malformed_schema_json.so", {"malformed descriptor JSON", "inputSchema", "badjson_ping"}},
        {"broken_null_schema_length.so", {"malformed descriptor JSON", "inputSchema", "nullschema_ping"}},
        {"broken_non_utf8_text.so", {"the description of tool 'nonutf8_ping' is not UTF-8 (byte 5)"}},
        {"broken_deep_schema.so", {"the inputSchema of tool 'deepschema_ping' nests deeper than 64 levels"}},
        {"broken_invalid_input_schema.so", {"invalid inputSchema", "badinput_ping", "not a valid JSON Schema"}},
        {"broken_input_schema_not_object.so", {"invalid inputSchema", "notobject_ping", "\"type\": \"object\""}},
        {"broken_invalid_output_schema.so", {"invalid outputSchema", "badoutput_ping", "not a valid JSON Schema"}},
        {"broken_malformed_param_header.so",
         {"invalid inputSchema", "badheader_ping", "x-mcp-header", "not string, integer or boolean"}},
        {"broken_init_fails.so", {"init failed", "settings.api_key is missing"}},
    };
    std::string plugins = "plugins:\n  - echo.so\n";
    for (const auto& c : cases)
        plugins += std::string("  - ") + c.file + "\n";
    plugins += "  - serial.so\n";
    auto loaded = load(plugins);

    CHECK(loaded.serves_family("echo"));
    CHECK(loaded.serves_family("serial"));
    CHECK(loaded.registry->families().size() == 2);
    CHECK(loaded.registry->has_tool("echo"));
    CHECK(loaded.registry->has_tool("overlap"));
    CHECK(loaded.report.failures.size() == cases.size());
    CHECK(loaded.report.disabled.empty());

    int line = 3; // plugin_dir, "plugins:", echo.so come first
    for (const auto& c : cases) {
        ++line;
        INFO(c.file);
        const LoadFailure* failure = loaded.failure_of(c.file);
        REQUIRE(failure);
        for (const char* w : c.words)
            CHECK_THAT(failure->reason, Catch::Contains(w));
        CHECK(failure->where.file == "test.yaml");
        CHECK(failure->where.line == line);
    }
}

TEST_CASE("a larger descriptor with a zero tail is served", "[loader]") {
    auto loaded = load("plugins: [broken_wide_tail_zero.so]\n");
    CHECK(loaded.report.failures.empty());
    CHECK(loaded.serves_family("widezero"));
    const auto* tool = loaded.registry->find("widezero_ping");
    REQUIRE(tool);
    CHECK(tool->family == "widezero");
    CHECK(tool->description == "Does nothing.");
}

TEST_CASE("init receives the domain's settings", "[loader]") {
    auto loaded = load("plugins: [broken_init_fails.so]\n"
                       "domains:\n  initfail:\n    settings: {api_key: k-1}\n");
    CHECK(loaded.report.failures.empty());
    CHECK(loaded.registry->has_tool("initfail_ping"));
}

TEST_CASE("a tool name clash refuses the later family until a prefix resolves it", "[loader]") {
    SECTION("without a prefix") {
        auto loaded = load("plugins: [echo.so, broken_tool_name_clash.so]\n");
        CHECK(loaded.serves_family("echo"));
        CHECK_FALSE(loaded.serves_family("clashfamily"));
        const auto* failure = loaded.failure_of("broken_tool_name_clash.so");
        REQUIRE(failure);
        CHECK_THAT(failure->reason, Catch::Contains("tool name 'echo' clashes with family 'echo'"));
        CHECK_THAT(failure->reason, Catch::Contains("domains.clashfamily.prefix"));
        REQUIRE(loaded.registry->find("echo"));
        CHECK(loaded.registry->find("echo")->family == "echo");
    }
    SECTION("with domains.clashfamily.prefix") {
        auto loaded = load("plugins: [echo.so, broken_tool_name_clash.so]\n"
                           "domains: {clashfamily: {prefix: \"x_\"}}\n");
        CHECK(loaded.report.failures.empty());
        CHECK(loaded.serves_family("echo"));
        CHECK(loaded.serves_family("clashfamily"));
        const auto* prefixed = loaded.registry->find("x_echo");
        REQUIRE(prefixed);
        CHECK(prefixed->family == "clashfamily");
        CHECK(prefixed->plugin_name == "echo");
        CHECK(prefixed->listing["name"] == "x_echo");
        CHECK(loaded.registry->find("echo")->family == "echo");
    }
}

TEST_CASE("a tool under a host tool's name is refused, and served under a prefix", "[loader]") {
    {
        auto loaded = load("plugins: [echo.so, broken_host_tool_name.so]\n");
        CHECK(loaded.serves_family("echo"));
        CHECK_FALSE(loaded.registry->has_tool("call_tool"));
        const auto* failure = loaded.failure_of("broken_host_tool_name.so");
        REQUIRE(failure);
        CHECK_THAT(failure->reason, Catch::Contains("tool 'call_tool' takes the name of one of the host's own tools"));
    }
    {
        auto loaded = load("plugins: [broken_host_tool_name.so]\ndomains: {shadow: {prefix: x_}}\n");
        CHECK(loaded.registry->has_tool("x_call_tool"));
    }
}

TEST_CASE("a refused family is not counted as served", "[loader]") {
    // A copy of the clash fixture under another name is a second plugin of
    // clashfamily. The first was refused, so the copy must be refused for the
    // same clash, not as a duplicate of a family nobody serves.
    TempDir dir;
    const auto copy = dir.path() / "clash_copy.so";
    std::filesystem::copy_file(plugin_dir() / "broken_tool_name_clash.so", copy);
    auto loaded = load("plugins: [echo.so, broken_tool_name_clash.so, " + copy.string() + "]\n");
    REQUIRE(loaded.report.failures.size() == 2);
    CHECK(loaded.report.failures[1].path == copy.string());
    CHECK_THAT(loaded.report.failures[1].reason, Catch::Contains("clashes with family 'echo'"));
}

TEST_CASE("a second plugin of a served family is refused, naming the first", "[loader]") {
    auto loaded = load("plugins: [echo.so, broken_duplicate_family.so]\n");
    CHECK_FALSE(loaded.registry->has_tool("echo_twin"));
    const auto* failure = loaded.failure_of("broken_duplicate_family.so");
    REQUIRE(failure);
    CHECK_THAT(failure->reason,
               Catch::Contains("family 'echo' is already served by " + (plugin_dir() / "echo.so").string()));
}

TEST_CASE("a file listed twice is refused once as such", "[loader]") {
    auto loaded = load("plugins: [echo.so, " + (plugin_dir() / "echo.so").string() + "]\n");
    CHECK(loaded.serves_family("echo"));
    REQUIRE(loaded.report.failures.size() == 1);
    CHECK_THAT(loaded.report.failures[0].reason, Catch::Contains("listed more than once"));
}

TEST_CASE("domains: {echo: false} disables the family and keeps the others", "[loader]") {
    auto loaded = load("plugins: [echo.so, serial.so]\ndomains: {echo: false}\n");
    CHECK(loaded.report.failures.empty());
    CHECK_FALSE(loaded.serves_family("echo"));
    CHECK_FALSE(loaded.registry->has_tool("echo"));
    CHECK(loaded.serves_family("serial"));
    REQUIRE(loaded.report.disabled.size() == 1);
    CHECK(loaded.report.disabled[0].family == "echo");
    CHECK(loaded.report.disabled[0].path == (plugin_dir() / "echo.so").string());
}

TEST_CASE("a plugin path with a slash resolves against the config file", "[loader]") {
    TempDir dir;
    const auto relative = std::filesystem::relative(plugin_dir() / "echo.so", dir.path() / "conf");
    REQUIRE(relative.has_parent_path());
    const auto file = dir.write("conf/gatehouse.yaml", "plugins: [" + relative.string() + ", ./serial.so]\n");
    auto cfg = gatehouse::config::load_config_file(file);
    LoadReport report;
    auto registry = PluginLoader::load(cfg, report);
    CHECK(registry->has_tool("echo"));
    // ./serial.so has a slash, so it is looked up beside the config, not in plugin_dir.
    REQUIRE(report.failures.size() == 1);
    CHECK(report.failures[0].path == (dir.path() / "conf/serial.so").string());
    CHECK(report.failures[0].reason == "file not found");
}

TEST_CASE("a loaded tool carries what its plugin declared", "[loader]") {
    auto loaded = load("plugins: [echo.so]\n");
    const auto* echo = loaded.registry->find("echo");
    REQUIRE(echo);
    CHECK(echo->title == "Echo");
    CHECK(echo->risk == gatehouse::plugins::Risk::read);
    REQUIRE(echo->output_schema);
    CHECK(echo->listing["inputSchema"]["required"] == nlohmann::json::array({"text"}));
    CHECK(echo->listing["annotations"]["readOnlyHint"] == true);
    CHECK(echo->listing["_meta"]["dev.gatehouse/risk"] == "read");
    const auto& family = loaded.registry->families().at(0);
    CHECK(family.plugin_name == "gatehouse-test-echo");
    CHECK(family.version == "1.0.0");
    CHECK(family.reentrant);
}

TEST_CASE("hints that claim less than the declared risk are published as the risk says", "[loader]") {
    auto loaded = load("plugins: [broken_understated_hints.so]\n");
    CHECK(loaded.report.failures.empty());
    const auto* wipe = loaded.registry->find("hints_wipe");
    REQUIRE(wipe);
    CHECK(wipe->risk == gatehouse::plugins::Risk::destructive);
    CHECK(wipe->listing["annotations"]["readOnlyHint"] == false);
    CHECK(wipe->listing["annotations"]["destructiveHint"] == true);
    CHECK(wipe->listing["annotations"]["title"] == "Wipe");
}

TEST_CASE("a gated tool whose schema already requires \"session\" publishes it once", "[loader]") {
    gatehouse::plugins::Tool tool;
    tool.name = "t";
    tool.input_schema = gatehouse::schema::JsonSchema::compile(nlohmann::json::parse(
        R"({"type":"object","properties":{"session":{"type":"string"},"n":{"type":"integer"}},"required":["session","n"]})"));
    gatehouse::plugins::publish_listing(tool, true);
    CHECK(tool.listing["inputSchema"]["required"] == nlohmann::json::array({"session", "n"}));
    gatehouse::plugins::publish_listing(tool, true);
    CHECK(tool.listing["inputSchema"]["required"] == nlohmann::json::array({"session", "n"}));
}

TEST_CASE("an ABI 1.1 plugin loads unchanged: nothing past its struct_size is read", "[loader][abi]") {
    auto loaded = load("plugins: [abi11.so, conformance.so]\n");
    CHECK(loaded.report.failures.empty());
    CHECK(loaded.serves_family("abi11"));
    CHECK(loaded.registry->has_tool("abi11_ping"));
    const auto& families = loaded.registry->families();
    REQUIRE(families.size() == 2);
    CHECK(families[0].resources + families[0].resource_templates + families[0].prompts == 0);
    // Only the conformance family's offer is served.
    CHECK(loaded.registry->resources().size() == 3);
    CHECK(loaded.registry->resource_templates().size() == 1);
    CHECK(loaded.registry->prompts().size() == 5);
    CHECK(loaded.registry->offers_completions());
}

TEST_CASE("a families' resources and prompts are found by URI and name", "[loader][resources]") {
    auto loaded = load("plugins: [conformance.so]\n");
    const auto& r = *loaded.registry;
    REQUIRE(r.find_resource("test://static-text"));
    CHECK(r.find_resource("test://static-text")->family == "conformance");
    CHECK_FALSE(r.find_resource("test://static"));
    REQUIRE(r.find_resource_template("test://template/{id}/data"));
    CHECK(r.find_resource_template("test://template/{id}/data")->complete != nullptr);
    REQUIRE(r.find_prompt("test_prompt_with_arguments"));
    CHECK(r.find_prompt("test_prompt_with_arguments")->arguments.size() == 2);
    CHECK(r.find_prompt("test_simple_prompt")->complete == nullptr);
    CHECK_FALSE(r.find_prompt("nope"));
    CHECK_FALSE(r.resources_fingerprint().empty());
    CHECK(r.resources_fingerprint() != r.prompts_fingerprint());
}

TEST_CASE("a resource URI or prompt name served by another family refuses the later family", "[loader][resources]") {
    SECTION("the same URI, even with a prefix") {
        auto loaded = load("plugins: [conformance.so, broken_resource_clash.so]\n"
                           "domains: {resourceclash: {prefix: \"r_\"}}\n");
        CHECK(loaded.serves_family("conformance"));
        CHECK_FALSE(loaded.serves_family("resourceclash"));
        const auto* failure = loaded.failure_of("broken_resource_clash.so");
        REQUIRE(failure);
        CHECK_THAT(failure->reason, Catch::Contains("resource URI 'test://static-text' is already served by family "
                                                    "'conformance'"));
    }
    SECTION("alone it is served") {
        auto loaded = load("plugins: [broken_resource_clash.so]\n");
        CHECK(loaded.report.failures.empty());
        CHECK(loaded.registry->find_resource("test://static-text")->family == "resourceclash");
    }
    SECTION("the same prompt name without a prefix") {
        auto loaded = load("plugins: [conformance.so, broken_prompt_clash.so]\n");
        const auto* failure = loaded.failure_of("broken_prompt_clash.so");
        REQUIRE(failure);
        CHECK_THAT(failure->reason, Catch::Contains("prompt name 'test_simple_prompt' clashes with family "
                                                    "'conformance'") &&
                                        Catch::Contains("domains.promptclash.prefix"));
    }
    SECTION("the same prompt name with a prefix") {
        auto loaded = load("plugins: [conformance.so, broken_prompt_clash.so]\n"
                           "domains: {promptclash: {prefix: \"p_\"}}\n");
        CHECK(loaded.report.failures.empty());
        REQUIRE(loaded.registry->find_prompt("p_test_simple_prompt"));
        CHECK(loaded.registry->find_prompt("p_test_simple_prompt")->family == "promptclash");
        CHECK(loaded.registry->find_prompt("test_simple_prompt")->family == "conformance");
    }
}

TEST_CASE("tool settings in domains are laid over what the plugin declared before the registry freezes",
          "[loader][overrides]") {
    const std::string plugins = "plugins: [ledger.so]\nsession: {pinned: {store: s, user: u}}\n";
    auto plain = load(plugins);
    auto loaded = load(plugins + "domains:\n"
                                 "  ledger:\n"
                                 "    prefix: l_\n"
                                 "    tools:\n"
                                 "      ledger_balance:\n"
                                 "        rules: Read the balance aloud.\n"
                                 "        risk: write\n"
                                 "        required_scopes: [books, audit]\n"
                                 "      ledger_refund: {required_scopes: [], gated: false}\n"
                                 "      ledger_close: {gated: true, risk: read}\n");
    REQUIRE(loaded.report.failures.empty());
    CHECK(loaded.registry->fingerprint() != plain.registry->fingerprint());

    const auto* balance = loaded.registry->find("l_ledger_balance");
    REQUIRE(balance);
    CHECK(balance->rules == "Read the balance aloud.");
    CHECK(balance->risk == gatehouse::plugins::Risk::write);
    CHECK(balance->required_scopes == std::vector<std::string>{"books", "audit"});
    CHECK(balance->listing["_meta"]["dev.gatehouse/hasRules"] == true);
    CHECK(balance->listing["_meta"]["dev.gatehouse/risk"] == "write");
    CHECK(balance->listing["_meta"]["dev.gatehouse/requiredScopes"] == nlohmann::json::array({"books", "audit"}));
    CHECK(balance->listing["annotations"]["readOnlyHint"] == false);
    CHECK(balance->listing["annotations"]["destructiveHint"] == false);
    CHECK(balance->listing["_meta"]["dev.gatehouse/scope"] == "ledger:read"); // what is not set stays

    // Made ungated: no session argument, and the gate lets it by; its own rules stay.
    const auto* refund = loaded.registry->find("l_ledger_refund");
    REQUIRE(refund);
    CHECK(refund->gate_exempt);
    CHECK(refund->required_scopes.empty());
    CHECK(refund->rules == "Ask the person before every refund.");
    CHECK_FALSE(refund->listing["inputSchema"]["properties"].contains("session"));
    CHECK(refund->listing["inputSchema"]["required"] == nlohmann::json::array({"amount"}));
    CHECK(plain.registry->find("ledger_refund")->listing["inputSchema"]["properties"].contains("session"));

    // Made gated: the published schema asks for the session handle.
    const auto* close = loaded.registry->find("l_ledger_close");
    REQUIRE(close);
    CHECK_FALSE(close->gate_exempt);
    CHECK(close->listing["inputSchema"]["properties"].contains("session"));
    CHECK(close->listing["inputSchema"]["required"] == nlohmann::json::array({"session"}));
    CHECK(close->listing["annotations"]["readOnlyHint"] == true);
    CHECK_FALSE(close->listing["annotations"].contains("destructiveHint"));
    CHECK_FALSE(plain.registry->find("ledger_close")->listing["inputSchema"].contains("required"));
}

TEST_CASE("a tool setting naming no tool of the family refuses that family, at the setting's place",
          "[loader][overrides]") {
    auto loaded = load("plugins: [ledger.so, echo.so]\n"
                       "domains:\n"
                       "  ledger:\n"
                       "    tools:\n"
                       "      ledger_refund: {rules: Ask twice.}\n"
                       "      ledger_balanse: {rules: x}\n"
                       "      ledger_clos: {gated: true}\n");
    CHECK(loaded.serves_family("echo"));
    CHECK_FALSE(loaded.serves_family("ledger"));
    CHECK_FALSE(loaded.registry->find("ledger_refund"));
    REQUIRE(loaded.report.failures.size() == 2);
    const auto& first = loaded.report.failures[0];
    CHECK(first.path == (plugin_dir() / "ledger.so").string());
    CHECK(first.where.file == "test.yaml");
    CHECK(first.where.line == 7);
    CHECK(first.where.column == 7);
    CHECK(first.reason == "domains.ledger.tools names 'ledger_balanse', but the ledger family declares no such tool "
                          "(its tools: ledger_balance, ledger_refund, ledger_close)");
    CHECK(loaded.report.failures[1].where.line == 8);
    CHECK_THAT(loaded.report.failures[1].reason, Catch::Contains("'ledger_clos'"));
}

TEST_CASE("a tool declared after the host took the descriptor fails the load, saying why", "[loader]") {
    auto loaded = load("plugins: [broken_late_tool.so, echo.so]\n");
    CHECK(loaded.serves_family("echo"));
    CHECK_FALSE(loaded.serves_family("latetool"));
    CHECK_FALSE(loaded.registry->has_tool("latetool_ping"));
    const LoadFailure* failure = loaded.failure_of("broken_late_tool.so");
    REQUIRE(failure);
    CHECK_THAT(failure->reason, Catch::Contains("init failed"));
    CHECK_THAT(failure->reason, Catch::Contains("tool 'latetool_late' is declared after the host took the descriptor"));
}

TEST_CASE("a family's command-line verbs are read from its descriptor", "[loader]") {
    auto loaded = load("plugins: [verb.so, echo.so]\n");
    REQUIRE(loaded.report.failures.empty());
    std::vector<std::string> verbs;
    for (const auto& plugin : loaded.registry->plugins())
        for (const auto& command : plugin->commands())
            verbs.push_back(plugin->family() + " " + command.name + " " + command.usage);
    CHECK(verbs == std::vector<std::string>{"verb greet NAME", "verb verb-fail ", "verb verb-exit CODE"});
}

TEST_CASE("a call whose job throws hands its plugin place on: the call parked behind it runs", "[limits]") {
    auto cfg = gatehouse::config::load_config_text(
        "plugin_dir: " + plugin_dir().string() + "\nplugins: [{path: echo.so, max_in_flight: 1}]\n", "test.yaml", "/");
    LoadReport report;
    const auto registry = PluginLoader::load(cfg, report);
    REQUIRE(report.failures.empty());
    const auto* entry = registry->entry("echo");
    REQUIRE(entry);
    gatehouse::plugins::LoadedPlugin& plugin = *entry->plugin;
    std::vector<std::function<void()>> submitted;
    const auto later = [&](std::function<void()> job) { submitted.push_back(std::move(job)); };

    auto first = plugin.admit([]() -> bool { throw std::runtime_error("a fault in the call"); }, later);
    REQUIRE(first);
    bool second_ran = false;
    CHECK_FALSE(plugin.admit(
        [&] {
            second_ran = true;
            return true;
        },
        later)); // parked: the one place is taken
    CHECK_THROWS(first());
    REQUIRE(submitted.size() == 1); // the throw handed the place on
    submitted.front()();
    CHECK(second_ran);
    CHECK(plugin.admit([] { return true; }, later)); // and gave it back after
}

TEST_CASE("a job answered later keeps its place until its answer; the next one that only sends runs there",
          "[plugins]") {
    auto cfg = gatehouse::config::load_config_text(
        "plugin_dir: " + plugin_dir().string() + "\nplugins: [{path: echo.so, max_in_flight: 1}]\n", "test.yaml", "/");
    LoadReport report;
    const auto registry = PluginLoader::load(cfg, report);
    REQUIRE(report.failures.empty());
    gatehouse::plugins::LoadedPlugin& plugin = *registry->entry("echo")->plugin;
    std::vector<std::function<void()>> submitted;
    const auto later = [&](std::function<void()> job) { submitted.push_back(std::move(job)); };

    auto first = plugin.admit([] { return false; }, later, true); // begun; its answer comes later
    REQUIRE(first);
    first();
    int sent = 0, waited = 0;
    CHECK_FALSE(plugin.admit(
        [&] {
            ++sent;
            return false;
        },
        later, true));
    CHECK_FALSE(plugin.admit(
        [&] {
            ++waited;
            return true;
        },
        later));
    CHECK(sent == 0);           // the answer is not in: the place is still the first job's
    plugin.hand_on_place(true); // the first answer, heard: the next only sends, so it runs here
    CHECK(sent == 1);
    CHECK(submitted.empty());
    plugin.hand_on_place(true); // the second's: the next may wait on its family, so it goes to the pool
    CHECK(waited == 0);
    REQUIRE(submitted.size() == 1);
    submitted.front()();
    CHECK(waited == 1);
    CHECK(plugin.admit([] { return true; }, later)); // every place given back
}
