#include "child_process.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using gatehouse::test::ChildResult;
using gatehouse::test::plugin_dir;
using gatehouse::test::run_child;
using gatehouse::test::TempDir;
using nlohmann::json;

namespace {

// Runs gatehouse with a predictable log level (unless the test sets one).
ChildResult run_gatehouse(const std::vector<std::string>& args, const std::string& input = "",
                          std::map<std::string, std::string> env = {}) {
    env.emplace("GATEHOUSE_LOG", "");
    env.emplace("GATEHOUSE_DATA_DIR", "/tmp/gatehouse-cli-test-data");
    return run_child(GATEHOUSE_BINARY, args, input, env);
}

// A config over the fixtures: plugin_dir is set, `rest` adds the rest. The
// CLI is under test here, not the gate, so fixture tools run unchecked.
std::string config(const TempDir& dir, const std::string& rest) {
    return dir.write("gatehouse.yaml", "plugin_dir: " + plugin_dir().string() + "\n" + rest + "\ngate: false\n")
        .string();
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

// Every stdout line of a serve run, parsed; fails the test on anything that
// is not a JSON-RPC 2.0 message.
std::vector<json> protocol_lines(const ChildResult& r) {
    std::vector<json> out;
    for (const auto& line : lines(r.out)) {
        INFO("stdout line: " << line);
        json message;
        REQUIRE_NOTHROW(message = json::parse(line));
        REQUIRE(message.is_object());
        CHECK(message["jsonrpc"] == "2.0");
        out.push_back(std::move(message));
    }
    return out;
}

const std::string kPing = R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
                          "\n";

} // namespace

TEST_CASE("option --version names the host and its plugin ABI", "[cli]") {
    auto r = run_gatehouse({"--version"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith(std::string("gatehouse ") + GATEHOUSE_EXPECTED_VERSION));
    CHECK_THAT(r.out, Catch::Contains("plugin ABI 1."));
}

TEST_CASE("option --help prints the usage on stdout, no command prints it and fails", "[cli]") {
    auto help = run_gatehouse({"--help"});
    CHECK(help.exit_code == 0);
    for (const char* word : {"Usage:", "serve", "check-config", "plugins", "GATEHOUSE_LOG"})
        CHECK_THAT(help.out, Catch::Contains(word));
    auto none = run_gatehouse({});
    CHECK(none.exit_code == 2);
    CHECK_THAT(none.out, Catch::Contains("Usage:"));
}

TEST_CASE("an unknown command or option fails with exit code 2", "[cli]") {
    auto command = run_gatehouse({"frobnicate"});
    CHECK(command.exit_code == 2);
    CHECK_THAT(command.err, Catch::Contains("unknown command 'frobnicate'"));
    auto option = run_gatehouse({"serve", "--frob"});
    CHECK(option.exit_code == 2);
    CHECK_THAT(option.err, Catch::Contains("unknown option --frob"));
    auto missing = run_gatehouse({"plugins", "--config"});
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Catch::Contains("--config needs a value"));
}

TEST_CASE("check-config accepts a good file and names FILE:LINE:COLUMN of a bad one", "[cli]") {
    TempDir dir;
    const auto good = dir.write("good.yaml", "plugin_dir: " + plugin_dir().string() +
                                                 "\nstrict: true\nplugins: [echo.so]\ndomains: {echo: {prefix: e_}}\n");
    auto ok = run_gatehouse({"check-config", good.string()});
    CHECK(ok.exit_code == 0);
    CHECK_THAT(ok.out, Catch::Contains("OK"));
    CHECK(ok.err.empty());

    const auto bad = dir.write("bad.yaml", "strict: true\nlimits:\n  workers: lots\n");
    auto refused = run_gatehouse({"check-config", bad.string()});
    CHECK(refused.exit_code != 0);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Catch::StartsWith(bad.string() + ":3:12: "));
    CHECK_THAT(refused.err, Catch::Contains("limits.workers must be a whole number"));

    const auto broken = dir.write("broken.yaml", "server: {name: x\n");
    auto syntax = run_gatehouse({"check-config", broken.string()});
    CHECK(syntax.exit_code != 0);
    CHECK_THAT(syntax.err, Catch::StartsWith(broken.string() + ":2:1: "));

    auto absent = run_gatehouse({"check-config", (dir.path() / "absent.yaml").string()});
    CHECK(absent.exit_code != 0);
    CHECK_THAT(absent.err, Catch::Contains("absent.yaml"));

    CHECK(run_gatehouse({"check-config"}).exit_code == 2);
}

TEST_CASE("check-config refuses a rate limit on a name no tool is published under", "[cli]") {
    TempDir dir;
    const std::string head =
        "plugin_dir: " + plugin_dir().string() + "\nplugins: [echo.so]\ndomains: {echo: {prefix: e_}}\n";
    // The tool's name without its domain's prefix: the limit would limit nothing.
    const auto typo = dir.write("typo.yaml", head + "rate_limits:\n  per_tool:\n    echo: {calls_per_second: 1}\n");
    auto refused = run_gatehouse({"check-config", typo.string()});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err, Catch::StartsWith(typo.string() + ":6:30: "));
    CHECK_THAT(refused.err, Catch::Contains("rate_limits.per_tool.echo names no tool this configuration publishes"));
    const auto right = dir.write("right.yaml", head + "rate_limits:\n  per_tool:\n    e_echo: {calls_per_second: 1}\n");
    auto ok = run_gatehouse({"check-config", right.string()});
    INFO(ok.err);
    CHECK(ok.exit_code == 0);
}

TEST_CASE("check-config reports every error in one run, each at FILE:LINE:COLUMN, and exits 1", "[cli]") {
    TempDir dir;
    const auto file = dir.write("many.yaml", "plugin_dir: " + plugin_dir().string() +
                                                 "\n"
                                                 "strict: maybe\n"
                                                 "limits:\n"
                                                 "  workers: lots\n"
                                                 "  page_size: 0\n"
                                                 "plugins: [echo.so, missing.so]\n"
                                                 "transports: [smtp]\n")
                          .string();
    auto r = run_gatehouse({"check-config", file});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    const auto errors = lines(r.err);
    REQUIRE(errors.size() == 6);
    CHECK_THAT(errors[0], Catch::StartsWith(file + ":2:9: ") && Catch::Contains("strict must be true or false"));
    CHECK_THAT(errors[1],
               Catch::StartsWith(file + ":4:12: ") && Catch::Contains("limits.workers must be a whole number"));
    CHECK_THAT(errors[2], Catch::StartsWith(file + ":5:14: ") && Catch::Contains("limits.page_size must be between 1"));
    // A plugin file that does not exist is said even while the YAML has mistakes.
    CHECK_THAT(errors[3], Catch::StartsWith(file + ":6:20: ") &&
                              Catch::Contains("plugin " + (plugin_dir() / "missing.so").string() +
                                              " does not load: file not found"));
    CHECK_THAT(errors[4], Catch::StartsWith(file + ":7:14: ") && Catch::Contains("unknown transport 'smtp'"));
    CHECK_THAT(errors[5], Catch::Contains("5 error(s)"));
}

TEST_CASE("check-config loads each plugin and reports every one that does not load, with path and reason", "[cli]") {
    TempDir dir;
    const auto file = dir.write("plugins.yaml", "plugin_dir: " + plugin_dir().string() +
                                                    "\n"
                                                    "plugins:\n"
                                                    "  - echo.so\n"
                                                    "  - missing.so\n"
                                                    "  - broken_init_fails.so\n"
                                                    "  - broken_abi_major_two.so\n")
                          .string();
    auto r = run_gatehouse({"check-config", file});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    const auto errors = lines(r.err);
    REQUIRE(errors.size() == 4);
    CHECK_THAT(errors[0], Catch::StartsWith(file + ":4:5: plugin " + (plugin_dir() / "missing.so").string() +
                                            " does not load: file not found"));
    CHECK_THAT(errors[1], Catch::StartsWith(file + ":5:5: plugin " + (plugin_dir() / "broken_init_fails.so").string() +
                                            " does not load: ") &&
                              Catch::Contains("settings.api_key is missing"));
    CHECK_THAT(errors[2], Catch::StartsWith(file + ":6:5: plugin " +
                                            (plugin_dir() / "broken_abi_major_two.so").string() + " does not load: ") &&
                              Catch::Contains("ABI version mismatch"));
    CHECK_THAT(errors[3], Catch::Contains("3 error(s)"));
}

TEST_CASE("check-config names a tool setting whose family declares no such tool", "[cli]") {
    TempDir dir;
    const auto file = dir.write("tools.yaml", "plugin_dir: " + plugin_dir().string() +
                                                  "\n"
                                                  "plugins: [ledger.so]\n"
                                                  "domains:\n"
                                                  "  ledger:\n"
                                                  "    tools:\n"
                                                  "      ledger_refund: {rules: Ask twice.}\n"
                                                  "      ledger_balanse: {risk: read}\n"
                                                  "  echo:\n"
                                                  "    tools: {echo: {gated: false}}\n")
                          .string();
    auto r = run_gatehouse({"check-config", file});
    CHECK(r.exit_code == 1);
    const auto errors = lines(r.err);
    REQUIRE(errors.size() == 2);
    CHECK_THAT(errors[0], Catch::StartsWith(file + ":7:7: ") && Catch::Contains("'ledger_balanse'") &&
                              Catch::Contains("its tools: ledger_balance, ledger_refund, ledger_close") &&
                              Catch::Contains((plugin_dir() / "ledger.so").string()));
    CHECK_THAT(errors[1], Catch::Contains("1 error(s)"));

    const auto fixed = dir.write("fixed.yaml", "plugin_dir: " + plugin_dir().string() +
                                                   "\n"
                                                   "plugins: [ledger.so]\n"
                                                   "domains:\n"
                                                   "  ledger:\n"
                                                   "    tools: {ledger_refund: {rules: Ask twice.}}\n"
                                                   "  echo:\n"
                                                   "    tools: {echo: {gated: false}}\n")
                           .string();
    // Once every plugin loads: no plugin serves the echo family here, so its
    // tool settings would apply to nothing.
    auto unserved = run_gatehouse({"check-config", fixed});
    CHECK(unserved.exit_code == 1);
    CHECK_THAT(unserved.err, Catch::StartsWith(fixed + ":6:3: ") && Catch::Contains("no plugin under plugins serves"));

    const auto good = dir.write("good.yaml", "plugin_dir: " + plugin_dir().string() +
                                                 "\n"
                                                 "plugins: [ledger.so]\n"
                                                 "domains: {ledger: {tools: {ledger_refund: {rules: Ask twice.}}}}\n")
                          .string();
    auto ok = run_gatehouse({"check-config", good});
    CHECK(ok.exit_code == 0);
    CHECK_THAT(ok.out, Catch::Contains("OK"));
}

TEST_CASE("plugins lists families, tools, scopes, risk, rules and every load failure", "[cli]") {
    TempDir dir;
    const auto file = config(dir, "plugins: [ledger.so, echo.so, missing.so, broken_abi_major_two.so]\n"
                                  "domains: {echo: {prefix: e_}}\n");
    const std::string missing = (plugin_dir() / "missing.so").string();
    const std::string abi = (plugin_dir() / "broken_abi_major_two.so").string();

    SECTION("human form") {
        auto r = run_gatehouse({"plugins", "--config", file});
        CHECK(r.exit_code == 1); // failures make it fail, so scripts notice
        CHECK_THAT(r.out, Catch::Contains("family ledger"));
        CHECK_THAT(r.out, Catch::Contains("gatehouse-test-ledger 0.3.0"));
        CHECK_THAT(r.out, Catch::Contains("has rules"));
        CHECK_THAT(r.out, Catch::Contains("family echo"));
        CHECK_THAT(r.out, Catch::Contains("e_echo"));
        bool saw_refund = false;
        for (const auto& line : lines(r.out)) {
            if (line.find("ledger_refund") == std::string::npos) continue;
            saw_refund = true;
            CHECK_THAT(line, Catch::Contains("risk=money"));
            CHECK_THAT(line, Catch::Contains("scope=ledger:write"));
            CHECK_THAT(line, Catch::Contains("grants=books,refunds"));
            CHECK_THAT(line, Catch::Contains("rules"));
        }
        CHECK(saw_refund);
        CHECK_THAT(r.out, Catch::Contains("gate-exempt"));
        CHECK_THAT(r.out, Catch::Contains("FAILED  " + missing + ": file not found"));
        CHECK_THAT(r.out, Catch::Contains("FAILED  " + abi + ": ABI version mismatch"));
    }
    SECTION("--json") {
        auto r = run_gatehouse({"plugins", "--json", "--config", file});
        CHECK(r.exit_code == 1);
        json listing;
        REQUIRE_NOTHROW(listing = json::parse(r.out));
        REQUIRE(listing["families"].size() == 2);
        const auto& ledger = listing["families"][0];
        CHECK(ledger["family"] == "ledger");
        CHECK(ledger["rules"] == true);
        REQUIRE(ledger["tools"].size() == 3);
        json refund;
        for (const auto& t : ledger["tools"])
            if (t["name"] == "ledger_refund") refund = t;
        CHECK(refund["risk"] == "money");
        CHECK(refund["scope"] == "ledger:write");
        CHECK(refund["required_scopes"] == json::array({"books", "refunds"}));
        CHECK(refund["rules"] == true);
        CHECK(listing["families"][1]["prefix"] == "e_");
        REQUIRE(listing["failures"].size() == 2);
        CHECK(listing["failures"][0]["path"] == missing);
        CHECK(listing["failures"][0]["reason"] == "file not found");
        CHECK(listing["failures"][0]["listed_at"] == file + ":2:31");
        CHECK(listing["failures"][1]["path"] == abi);
        CHECK_THAT(listing["failures"][1]["reason"].get<std::string>(), Catch::Contains("ABI 2.3"));
    }
}

TEST_CASE("plugins marks the tools that read critical notes", "[cli]") {
    TempDir dir;
    const auto file = config(dir, "plugins: [gated.so]\n");
    SECTION("human form") {
        auto r = run_gatehouse({"plugins", "--config", file});
        CHECK(r.exit_code == 0);
        bool saw = false;
        for (const auto& line : lines(r.out)) {
            if (line.find("read_critical") != std::string::npos) {
                saw = true;
                CHECK_THAT(line, Catch::Contains("reads-critical"));
            } else {
                CHECK_THAT(line, !Catch::Contains("reads-critical"));
            }
        }
        CHECK(saw);
    }
    SECTION("--json") {
        auto r = run_gatehouse({"plugins", "--json", "--config", file});
        json listing;
        REQUIRE_NOTHROW(listing = json::parse(r.out));
        REQUIRE(listing["families"].size() == 1);
        int marked = 0;
        for (const auto& t : listing["families"][0]["tools"]) {
            CHECK(t["reads_critical"] == (t["name"] == "read_critical"));
            marked += t["reads_critical"] == true;
        }
        CHECK(marked == 1);
    }
}

TEST_CASE("plugins shows which families the operator allowed the store password", "[cli]") {
    TempDir dir;
    const auto file = config(dir, "plugins:\n  - serial.so\n  - {path: gated.so, store_credentials: true}\n");
    SECTION("human form") {
        auto r = run_gatehouse({"plugins", "--config", file});
        CHECK(r.exit_code == 0);
        int families = 0;
        for (const auto& line : lines(r.out)) {
            if (line.rfind("family ", 0) != 0) continue;
            ++families;
            if (line.rfind("family gated ", 0) == 0)
                CHECK_THAT(line, Catch::Contains("store_credentials allowed"));
            else
                CHECK_THAT(line, !Catch::Contains("store_credentials"));
        }
        CHECK(families == 2);
    }
    SECTION("--json") {
        auto r = run_gatehouse({"plugins", "--json", "--config", file});
        json listing;
        REQUIRE_NOTHROW(listing = json::parse(r.out));
        REQUIRE(listing["families"].size() == 2);
        for (const auto& f : listing["families"])
            CHECK(f["store_credentials"] == (f["family"] == "gated"));
    }
}

TEST_CASE("plugins exits 0 when everything loads and lists disabled families", "[cli]") {
    TempDir dir;
    auto r = run_gatehouse({"plugins", "--json", "--config",
                            config(dir, "plugins: [echo.so, serial.so]\n"
                                        "domains: {echo: false}\n")});
    CHECK(r.exit_code == 0);
    auto listing = json::parse(r.out);
    CHECK(listing["families"].size() == 1);
    CHECK(listing["disabled"] == json::array({{{"family", "echo"}, {"path", (plugin_dir() / "echo.so").string()}}}));
}

TEST_CASE("serve with strict: true refuses to start when a plugin fails", "[cli]") {
    TempDir dir;
    auto r = run_gatehouse(
        {"serve", "--config", config(dir, "strict: true\nplugins: [echo.so, broken_init_fails.so]\n")}, kPing);
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains((plugin_dir() / "broken_init_fails.so").string()));
    CHECK_THAT(r.err, Catch::Contains("settings.api_key is missing"));
    CHECK_THAT(r.err, Catch::Contains("strict"));
}

TEST_CASE("serve with strict: false reports the failure and serves the rest", "[cli]") {
    TempDir dir;
    const std::string input =
        kPing + R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},)"
                R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                R"("io.modelcontextprotocol/clientCapabilities":{}}}})"
                "\n";
    auto r = run_gatehouse(
        {"serve", "--config", config(dir, "strict: false\nplugins: [broken_no_entry_symbol.so, echo.so]\n")}, input);
    CHECK(r.exit_code == 0);
    auto answers = protocol_lines(r);
    REQUIRE(answers.size() == 2);
    CHECK(answers[0] == json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
    CHECK(answers[1]["id"] == 2);
    CHECK(answers[1]["result"]["structuredContent"]["text"] == "hi");
    CHECK_THAT(r.err, Catch::Contains((plugin_dir() / "broken_no_entry_symbol.so").string()));
    CHECK_THAT(r.err, Catch::Contains("missing entry symbol gh_plugin_entry"));
}

TEST_CASE("GATEHOUSE_LOG sets the level of the stderr log", "[cli]") {
    TempDir dir;
    const auto file = config(dir, "log_level: info\nplugins: [echo.so]\n");
    const std::string input = kPing + R"({"jsonrpc":"2.0","method":"notifications/unheard_of"})"
                                      "\n";
    auto info = run_gatehouse({"serve", "--config", file}, input);
    auto debug = run_gatehouse({"serve", "--config", file}, input, {{"GATEHOUSE_LOG", "debug"}});
    auto quiet = run_gatehouse({"serve", "--config", file}, input, {{"GATEHOUSE_LOG", "error"}});
    for (const auto* r : {&info, &debug, &quiet}) {
        CHECK(r->exit_code == 0);
        CHECK(protocol_lines(*r).size() == 1);
    }
    CHECK_THAT(info.err, Catch::Contains("family 'echo' loaded"));
    CHECK_THAT(info.err, !Catch::Contains("ignoring notification notifications/unheard_of"));
    CHECK_THAT(debug.err, Catch::Contains("ignoring notification notifications/unheard_of"));
    CHECK_THAT(debug.err, Catch::Contains("family 'echo' loaded"));
    CHECK_THAT(quiet.err, !Catch::Contains("family 'echo' loaded"));
}

TEST_CASE("a FILE given to a verb that takes none is refused, not ignored", "[cli]") {
    TempDir dir;
    const auto file = config(dir, "plugins: [echo.so]\n");
    // Before, `serve prod.yaml` served the embedded default configuration.
    for (const char* verb : {"serve", "plugins", "docs"}) {
        auto r = run_gatehouse({verb, file}, "");
        INFO(verb << ": " << r.err);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Catch::Contains(std::string(verb) + " takes no FILE ('" + file +
                                          "'); did you mean --config " + file + "?"));
        CHECK(r.out.empty());
    }
    auto two = run_gatehouse({"check-config", "--config", file, file}, "");
    CHECK(two.exit_code == 2);
    CHECK_THAT(two.err, Catch::Contains("check-config needs exactly one FILE"));
}

TEST_CASE("GATEHOUSE_LOG ignores case, and a value that is no level keeps the configured one, said so", "[cli]") {
    TempDir dir;
    const auto file = config(dir, "log_level: info\nplugins: [echo.so]\n");
    // spdlog reads a name it does not know as "off": before, both ran silent.
    auto upper = run_gatehouse({"serve", "--config", file}, kPing, {{"GATEHOUSE_LOG", "DEBUG"}});
    auto typo = run_gatehouse({"serve", "--config", file}, kPing, {{"GATEHOUSE_LOG", "verbose\x1b"}});
    for (const auto* r : {&upper, &typo}) {
        CHECK(r->exit_code == 0);
        CHECK(protocol_lines(*r).size() == 1);
        CHECK_THAT(r->err, Catch::Contains("family 'echo' loaded"));
    }
    CHECK_THAT(upper.err, !Catch::Contains("not a log level"));
    // Said even where the configured level hides warnings.
    const auto quiet = config(dir, "log_level: error\nplugins: [echo.so]\n");
    auto hidden = run_gatehouse({"serve", "--config", quiet}, kPing, {{"GATEHOUSE_LOG", "verbose"}});
    CHECK(hidden.exit_code == 0);
    CHECK_THAT(hidden.err, Catch::Contains("GATEHOUSE_LOG is 'verbose', not a log level"));
    CHECK_THAT(hidden.err, !Catch::Contains("family 'echo' loaded"));
    CHECK_THAT(typo.err, Catch::Contains("GATEHOUSE_LOG is 'verbose?', not a log level (trace, debug, info, warn, "
                                         "error, critical, off); logging at info, as the configuration says"));
}

TEST_CASE("nothing but JSON-RPC reaches stdout during serve, even from a plugin that prints", "[cli]") {
    TempDir dir;
    const std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                             R"("io.modelcontextprotocol/clientCapabilities":{}})";
    const std::string input = R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{)" + meta + "}}\n" +
                              R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy_shout",)" +
                              meta + "}}\n" + "this line is not JSON\n" +
                              R"({"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{)" + meta + "}}\n" + kPing;
    auto r = run_gatehouse({"serve", "--config", config(dir, "plugins: [noisy.so, missing.so]\n")}, input,
                           {{"GATEHOUSE_LOG", "debug"}});
    CHECK(r.exit_code == 0);
    auto answers = protocol_lines(r);
    CHECK(answers.size() == 5);
    std::map<std::string, json> by_id;
    // MCP's schema has no null RequestId: an answer to an unreadable line has no id.
    for (const auto& a : answers)
        by_id[a.contains("id") ? a["id"].dump() : "none"] = a;
    CHECK(by_id["2"]["result"]["content"][0]["text"] == "shouted");
    CHECK(by_id["none"]["error"]["code"] == -32700);
    CHECK(by_id["3"]["error"]["code"] == -32601);
    // What the plugin printed went to stderr instead, from load, init and call.
    for (const char* when : {"at load", "in init", "in a call"}) {
        CHECK_THAT(r.err, Catch::Contains(std::string("noisy printf ") + when));
        CHECK_THAT(r.err, Catch::Contains(std::string("noisy write ") + when));
    }
}

namespace {

std::string file_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::set<std::string> markdown_files(const std::filesystem::path& dir) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".md") names.insert(entry.path().filename().string());
    return names;
}

} // namespace

// docs/reference/ is what `gatehouse docs` writes for the embedded default:
// a changed schema, rule or risk fails here until the pages are written
// again (gatehouse docs --out docs/reference).
TEST_CASE("docs/reference holds exactly what gatehouse docs writes for the default config", "[cli][docs]") {
    TempDir dir;
    const auto out = dir.path() / "reference";
    auto r = run_gatehouse({"docs", "--out", out.string()});
    REQUIRE(r.exit_code == 0);
    const std::filesystem::path shipped = std::filesystem::path(GATEHOUSE_SOURCE_DIR) / "docs" / "reference";
    const auto written = markdown_files(out);
    CHECK(written.size() >= 3); // session, memory, sessions
    CHECK(markdown_files(shipped) == written);
    for (const auto& name : written) {
        INFO("docs/reference/" << name << " differs from what `gatehouse docs --out docs/reference` writes");
        CHECK(file_text(shipped / name) == file_text(out / name));
    }
}
