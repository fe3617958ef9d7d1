#include "cli/embedded_config.hpp"
#include "config/config_loader.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using gatehouse::config::ConfigError;
using gatehouse::config::load_config_file;
using gatehouse::test::TempDir;

namespace {

// Loads `yaml` from a file and returns the error it raises ("" when none).
std::string error_of(const TempDir& dir, const std::string& yaml) {
    const auto file = dir.write("gatehouse.yaml", yaml);
    try {
        load_config_file(file);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("a complete config file is read into its typed fields", "[config]") {
    TempDir dir;
    const auto file = dir.write("etc/gatehouse.yaml", R"(
server:
  name: shop-host
  title: Shop Host
  instructions: Connect first.
strict: true
log_level: debug
plugin_dir: ../plugins
data_dir: /var/lib/gh
plugins:
  - memory.so
  - ./local/session.so
  - path: /opt/gh/sessions-bot.so
    store_credentials: true
domains:
  memory: false
  session:
    prefix: s_
    settings:
      store: main
      retries: 3
      quoted: "42"
      ratio: 0.5
      enabled: yes
      tags: [a, 1]
      nested: {deep: null}
  sessions-bot:
limits:
  max_message_bytes: 2048
  max_json_depth: 16
  workers: 2
  max_in_flight: 10
  page_size: 5
  tools_list_ttl_ms: 0
transports: [stdio]
)");
    const auto cfg = load_config_file(file);
    const auto etc = std::filesystem::absolute(dir.path() / "etc");

    CHECK(cfg.source == file.string());
    CHECK(cfg.server.name == "shop-host");
    CHECK(cfg.server.title == "Shop Host");
    CHECK(cfg.server.instructions == "Connect first.");
    CHECK(cfg.strict);
    CHECK(cfg.log_level == "debug");
    // Relative paths resolve against the config file's folder, not the cwd.
    CHECK(cfg.plugin_dir == (etc / "../plugins").lexically_normal());
    CHECK(cfg.data_dir == "/var/lib/gh");

    REQUIRE(cfg.plugins.size() == 3);
    // A bare name stays bare: the loader looks it up in plugin_dir.
    CHECK(cfg.plugins[0].path == "memory.so");
    CHECK(cfg.plugins[1].path == (etc / "local/session.so").lexically_normal());
    CHECK(cfg.plugins[2].path == "/opt/gh/sessions-bot.so");
    CHECK(cfg.plugins[0].where.line == 11); // the raw string starts with a newline
    CHECK(cfg.plugins[0].where.column == 5);
    // Only the operator's explicit grant lets a plugin ask for the store password.
    CHECK_FALSE(cfg.plugins[0].store_credentials);
    CHECK_FALSE(cfg.plugins[1].store_credentials);
    CHECK(cfg.plugins[2].store_credentials);

    REQUIRE(cfg.domains.size() == 3);
    CHECK_FALSE(cfg.domains.at("memory").enabled);
    CHECK(cfg.domains.at("sessions-bot").enabled);
    const auto& session = cfg.domains.at("session");
    CHECK(session.enabled);
    CHECK(session.prefix == "s_");
    CHECK(session.settings == nlohmann::json::parse(R"({"store": "main", "retries": 3, "quoted": "42",
        "ratio": 0.5, "enabled": true, "tags": ["a", 1], "nested": {"deep": null}})"));

    CHECK(cfg.limits.max_message_bytes == 2048);
    CHECK(cfg.limits.max_json_depth == 16);
    CHECK(cfg.limits.workers == 2);
    CHECK(cfg.limits.max_in_flight == 10);
    CHECK(cfg.limits.page_size == 5);
    CHECK(cfg.limits.tools_list_ttl_ms == 0);
    CHECK(cfg.transports == std::vector<std::string>{"stdio"});
}

TEST_CASE("requestState keys are read as 32 raw bytes, the sealing one first", "[config]") {
    TempDir dir;
    const std::string first(32, 'a'), second(32, 'b');
    const auto file = dir.write("gatehouse.yaml", "input_requests:\n  state_keys: [" +
                                                      std::string("YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=") +
                                                      ", YmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmI=]\n"
                                                      "  state_ttl_ms: 60000\n  client_timeout_ms: 2000\n");
    const auto cfg = load_config_file(file);
    CHECK(cfg.input_requests.state_keys == std::vector<std::string>{first, second});
    CHECK(cfg.input_requests.state_ttl_ms == 60000);
    CHECK(cfg.input_requests.client_timeout_ms == 2000);
}

TEST_CASE("an empty YAML document after the configuration is no second one", "[config]") {
    TempDir dir;
    CHECK(error_of(dir, "server:\n  name: x\n---\n") == "");
    CHECK(error_of(dir, "---\nserver:\n  name: x\n...\n") == "");
    CHECK(error_of(dir, "# a comment\n---\nserver:\n  name: x\n--- # the end\n# nothing more\n") == "");
    // A PEM key in a block scalar holds dashes, and is no marker.
    CHECK(error_of(dir, "server:\n  instructions: |\n    -----BEGIN-----\n    ---\n") == "");
}

TEST_CASE("an empty config file means every default", "[config]") {
    TempDir dir;
    const auto cfg = load_config_file(dir.write("empty.yaml", "# nothing here\n"));
    CHECK_FALSE(cfg.strict);
    CHECK(cfg.log_level == "info");
    CHECK(cfg.plugins.empty());
    CHECK(cfg.domains.empty());
    CHECK(cfg.limits.page_size == 100);
    CHECK(cfg.server.name == "gatehouse");
}

TEST_CASE("every config error names file:line:column and the mistake", "[config]") {
    TempDir dir;
    const std::string file = (dir.path() / "gatehouse.yaml").string();
    struct Case {
        const char* yaml;
        const char* where;
        const char* words;
    };
    const Case cases[] = {
        {"server:\n  name: x\nplugn_dir: lib\n", ":3:1: ", "unknown key 'plugn_dir' in the configuration"},
        {"server:\n  nmae: x\n", ":2:3: ", "unknown key 'nmae' in server"},
        {"limits:\n  worker: 2\n", ":2:3: ", "unknown key 'worker' in limits"},
        {"domains:\n  echo:\n    prefx: e_\n", ":3:5: ", "unknown key 'prefx' in domains.echo"},
        {"strict: maybe\n", ":1:9: ", "strict must be true or false"},
        {"server: [a, b]\n", ":1:9: ", "server must be a mapping"},
        {"plugins: echo.so\n", ":1:10: ", "plugins must be a list"},
        {"plugins:\n  - [a]\n", ":2:5: ", "a plugin path must be a string"},
        {"plugins:\n  - {path: a.so, store_credentials: maybe}\n",
         ":2:37: ", "a plugins entry's store_credentials must be true or false"},
        {"plugins:\n  - {path: a.so, store_credential: true}\n",
         ":2:18: ", "unknown key 'store_credential' in a plugins entry"},
        {"session:\n  pinned: {store: s, user: u}\n  program_settings_file: [a]\n",
         ":3:26: ", "session.program_settings_file must be"},
        {"domains:\n  echo: 5\n", ":2:9: ", "domains.echo must be true or false"},
        {"domains:\n  echo:\n    settings: [1]\n", ":3:15: ", "domains.echo.settings must be a mapping"},
        {"domains:\n  echo:\n    prefix: \"a b\"\n", ":3:13: ", "prefix may hold only"},
        {"domains:\n  echo:\n    exposure: hidden\n", ":3:15: ", "domains.echo.exposure must be listed or on_demand"},
        {"domains:\n  echo:\n    tools: [echo]\n", ":3:12: ", "domains.echo.tools must be a mapping"},
        {"domains:\n  echo:\n    tools:\n      echo: {rule: x}\n", ":4:14: ",
         "unknown key 'rule' in domains.echo.tools.echo (allowed: exposure, gated, required_scopes, risk, rules, "
         "scope)"},
        {"domains:\n  echo:\n    tools:\n      echo: {risk: huge}\n",
         ":4:20: ", "domains.echo.tools.echo.risk must be one of read, write, money, destructive, not 'huge'"},
        {"domains:\n  echo:\n    tools:\n      echo: {gated: maybe}\n",
         ":4:21: ", "domains.echo.tools.echo.gated must be true or false"},
        {"domains:\n  echo:\n    tools:\n      echo: {exposure: hidden}\n",
         ":4:24: ", "domains.echo.tools.echo.exposure must be listed or on_demand"},
        {"domains:\n  echo:\n    tools:\n      echo: {scope: 'a b'}\n",
         ":4:21: ", "domains.echo.tools.echo.scope is one scope, without spaces or quotes"},
        {"domains:\n  echo:\n    tools:\n      echo: {required_scopes: a}\n",
         ":4:31: ", "domains.echo.tools.echo.required_scopes must be a list of scopes"},
        {"domains:\n  echo:\n    tools:\n      echo: {required_scopes: [a, '']}\n",
         ":4:35: ", "a scope in domains.echo.tools.echo.required_scopes must not be empty"},
        {"domains:\n  echo:\n    tools:\n      echo: {rules: ''}\n",
         ":4:21: ", "domains.echo.tools.echo.rules must not be empty"},
        {"domains:\n  echo:\n    tools:\n      echo: 5\n", ":4:13: ", "domains.echo.tools.echo must be a mapping"},
        {"log_level: loud\n", ":1:12: ", "log_level must be one of trace, debug, info"},
        {"limits:\n  workers: 0\n", ":2:12: ", "limits.workers must be between 1 and 1024"},
        {"input_requests:\n  state_keys: [c2hvcnQ=]\n", ":2:16: ", "must be base64 of exactly 32 random bytes"},
        {"input_requests:\n  state_keys: abc\n", ":2:15: ", "input_requests.state_keys must be a list"},
        {"input_requests:\n  state_ttl_ms: 5\n", ":2:17: ", "input_requests.state_ttl_ms must be between 1000"},
        {"input_requests:\n  key: x\n", ":2:3: ", "unknown key 'key' in input_requests"},
        {"limits:\n  workers: -1\n", ":2:12: ", "limits.workers must be a whole number"},
        {"limits:\n  page_size: ten\n", ":2:14: ", "limits.page_size must be a whole number, not 'ten'"},
        {"limits:\n  max_message_bytes: 10\n", ":2:22: ", "limits.max_message_bytes must be between 1024"},
        {"limits:\n  max_json_depth: [4]\n", ":2:19: ", "limits.max_json_depth must be a whole number"},
        {"transports: [smtp]\n", ":1:14: ", "unknown transport 'smtp'"},
        {"strict: true\nstrict: false\n", ":2:1: ", "'strict' is set twice in the configuration"},
        {"domains:\n  echo: false\n  echo: true\n", ":3:3: ", "'echo' is set twice in domains"},
        {"domains:\n  [a]: true\n", ":2:3: ", "a key in domains must be a plain name"},
        {"- a\n- b\n", ":1:1: ", "the configuration must be a mapping"},
        {"domains:\n  echo:\n    settings: &s {me: *s}\n", ":3:", "domains.echo.settings nests deeper than 64 levels"},
        {"domains:\n  echo:\n    settings:\n      a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n      b: &b [*a, *a, *a, *a, "
         "*a, *a, *a, *a, *a, *a]\n"
         "      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
         "      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
         "      g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
         ":", "domains.echo.settings holds more than 100000 values once its aliases are followed"},
        {"server:\n  name: x\n---\nplugins: [a.so]\n", ":4:1: ", "a second YAML document starts here"},
        {"server:\n  name: x\n...\n--- {plugins: [a.so]}\n", ":4:1: ", "a second YAML document starts here"},
        // YAML syntax errors come from the parser, with its position.
        {"server: {name: x\n",
         ":2:1: ", "did not find expected ',' or '}' (while parsing a flow mapping that starts at line 1, column 9)"},
        {"plugins:\n  - a.so\n - b.so\n",
         ":3:2: ", "did not find expected key (while parsing a block mapping that starts at line 1, column 1)"},
        {"metrics:\n  allow: [10.0.0.0/8, ::1]\n",
         ":2:23: ", "inside [ ] or { } quote a value that starts with ':', such as an IPv6 address ('::1')"},
        {"grants: {x: [\"a\"]}\nsession: *nowhere\n",
         ":2:10: ", "the alias *nowhere names no anchor (&name) written before it"},
        {"server:\n  name: \"caf\xe9\"\n", ":2:", "invalid"},
    };
    for (const auto& c : cases) {
        INFO("yaml:\n" << c.yaml);
        const std::string error = error_of(dir, c.yaml);
        CHECK_THAT(error, Catch::StartsWith(file + c.where));
        CHECK_THAT(error, Catch::Contains(c.words));
    }
}

TEST_CASE("every mistake of a file is reported at once, in the order of the file", "[config]") {
    TempDir dir;
    const auto file = dir.write("many.yaml", "strict: maybe\n"            // 1:9
                                             "limits:\n"                  //
                                             "  workers: 0\n"             // 3:12
                                             "  page_size: ten\n"         // 4:14, beside the one above
                                             "plugins:\n"                 //
                                             "  - [a]\n"                  // 6:5
                                             "  - b.so\n"                 //   (read well)
                                             "domains:\n"                 //
                                             "  echo:\n"                  //
                                             "    prefx: e_\n"            // 10:5
                                             "    tools:\n"               //
                                             "      echo: {risk: huge}\n" // 12:20
                                             "      other: {gated: 2}\n"  // 13:22
                                             "session:\n"                 //
                                             "  backend: cassandra\n"     // 15:12
                                             "  pinned: {store: s}\n"     // 16:11
                                             "transports: [smtp]\n");     // 17:14
    try {
        load_config_file(file);
        FAIL("no error raised");
    } catch (const ConfigError& e) {
        std::vector<std::pair<int, int>> places;
        for (const auto& p : e.problems())
            places.emplace_back(p.where.line, p.where.column);
        CHECK(places ==
              std::vector<std::pair<int, int>>{
                  {1, 9}, {3, 12}, {4, 14}, {6, 5}, {10, 5}, {12, 20}, {13, 22}, {15, 12}, {16, 11}, {17, 14}});
        // One line each in what(), every one naming its place.
        std::vector<std::string> lines;
        std::istringstream text(e.what());
        for (std::string line; std::getline(text, line);)
            lines.push_back(line);
        REQUIRE(lines.size() == e.problems().size());
        for (std::size_t i = 0; i < lines.size(); ++i)
            CHECK_THAT(lines[i], Catch::StartsWith(file.string() + ":" + std::to_string(places[i].first) + ":" +
                                                   std::to_string(places[i].second) + ": "));
        CHECK_THAT(lines[3], Catch::Contains("a plugin path must be a string"));
        CHECK_THAT(lines[8], Catch::Contains("session.pinned needs both store and user"));
        CHECK(e.where().line == 1);
    }
}

TEST_CASE("check-config's reading keeps what read well beside every mistake", "[config]") {
    TempDir dir;
    const auto reading = gatehouse::config::read_config_file(
        dir.write("partial.yaml", "plugins: [a.so, [b], c.so]\nlimits: {workers: none}\n"));
    CHECK(reading.parsed);
    REQUIRE(reading.problems.size() == 2);
    REQUIRE(reading.config.plugins.size() == 2);
    CHECK(reading.config.plugins[0].as_written == "a.so");
    CHECK(reading.config.plugins[1].as_written == "c.so");

    const auto broken = gatehouse::config::read_config_file(dir.write("broken.yaml", "server: {name: x\n"));
    CHECK_FALSE(broken.parsed);
    REQUIRE(broken.problems.size() == 1);
    CHECK(broken.problems[0].where.line == 2);
}

TEST_CASE("tool settings are read per family and tool, as the family names its tools", "[config]") {
    TempDir dir;
    const auto cfg = load_config_file(dir.write("tools.yaml", R"(
domains:
  ledger:
    prefix: l_
    tools:
      ledger_refund:
        rules: Ask the person twice.
        risk: destructive
        required_scopes: [books, refunds.big]
        gated: true
        exposure: on_demand
      ledger_close:
        gated: false
        required_scopes: []
        exposure: listed
)"));
    const auto& tools = cfg.domains.at("ledger").tools;
    REQUIRE(tools.size() == 2);
    const auto& refund = tools.at("ledger_refund");
    CHECK(refund.rules == std::optional<std::string>("Ask the person twice."));
    CHECK(refund.risk == std::optional<std::string>("destructive"));
    CHECK(refund.required_scopes ==
          std::optional<std::vector<std::string>>(std::vector<std::string>{"books", "refunds.big"}));
    CHECK(refund.gated == std::optional<bool>(true));
    CHECK(refund.on_demand == std::optional<bool>(true));
    CHECK(refund.where.line == 6);
    CHECK(refund.where.column == 7);
    const auto& close = tools.at("ledger_close");
    CHECK_FALSE(close.rules);
    CHECK_FALSE(close.risk);
    CHECK(close.required_scopes == std::optional<std::vector<std::string>>(std::vector<std::string>{}));
    CHECK(close.gated == std::optional<bool>(false));
    CHECK(close.on_demand == std::optional<bool>(false));
}

TEST_CASE("the embedded default puts rules on the memory family's forget_all", "[config]") {
    const auto cfg = gatehouse::config::load_config_text(gatehouse::cli::kEmbeddedConfig, "<embedded>", "/opt/gh");
    const auto& forget_all = cfg.domains.at("memory").tools.at("forget_all");
    REQUIRE(forget_all.rules);
    CHECK_THAT(*forget_all.rules, Catch::Contains("forget_all deletes every note"));
    CHECK_FALSE(forget_all.gated); // the family's declaration stands: gated
}

TEST_CASE("ConfigError carries the location as data", "[config]") {
    TempDir dir;
    const auto file = dir.write("c.yaml", "strict: true\nlog_level: 3x\n");
    try {
        load_config_file(file);
        FAIL("no error raised");
    } catch (const ConfigError& e) {
        CHECK(e.where().file == file.string());
        CHECK(e.where().line == 2);
        CHECK(e.where().column == 12);
    }
}

TEST_CASE("an unreadable config file is named in the error", "[config]") {
    TempDir dir;
    const auto missing = dir.path() / "absent.yaml";
    try {
        load_config_file(missing);
        FAIL("no error raised");
    } catch (const ConfigError& e) {
        CHECK_THAT(e.what(), Catch::StartsWith(missing.string() + ": "));
        CHECK_THAT(e.what(), Catch::Contains("cannot read"));
    }
}

TEST_CASE("config text without a file resolves paths against the given folder", "[config]") {
    const auto cfg = gatehouse::config::load_config_text("plugin_dir: lib/plugins\nplugins: [sub/a.so, b.so]\n",
                                                         "<embedded>", "/opt/gatehouse");
    CHECK(cfg.source == "<embedded>");
    CHECK(cfg.plugin_dir == "/opt/gatehouse/lib/plugins");
    CHECK(cfg.plugins[0].path == "/opt/gatehouse/sub/a.so");
    CHECK(cfg.plugins[1].path == "b.so");
    try {
        gatehouse::config::load_config_text("strict: 7\n", "<embedded>", "/");
        FAIL("no error raised");
    } catch (const ConfigError& e) {
        CHECK_THAT(e.what(), Catch::StartsWith("<embedded>:1:9: "));
    }
}

TEST_CASE("the http section is read, and its mistakes name their place", "[config]") {
    TempDir dir;
    const auto file = dir.write("gatehouse.yaml", R"(
transports: [stdio, http]
http:
  listen: "[::1]:9000"
  path: /agents/mcp
  allowed_origins: [https://app.example.com]
  max_streams: 8
  drain_timeout_ms: 2500
)");
    const auto cfg = load_config_file(file);
    CHECK(cfg.transports == std::vector<std::string>{"stdio", "http"});
    CHECK(cfg.http.listen_host == "::1");
    CHECK(cfg.http.listen_port == 9000);
    CHECK(cfg.http.path == "/agents/mcp");
    CHECK(cfg.http.allowed_origins == std::vector<std::string>{"https://app.example.com"});
    CHECK(cfg.http.max_streams == 8);
    CHECK(cfg.http.drain_timeout_ms == 2500);

    CHECK(error_of(dir, "http:\n  listen: localhost\n").find("gatehouse.yaml:2:11: http.listen") != std::string::npos);
    CHECK(error_of(dir, "http:\n  listen: 127.0.0.1:99999\n").find("port between 0 and 65535") != std::string::npos);
    CHECK(error_of(dir, "http:\n  path: mcp\n").find("http.path must start with '/'") != std::string::npos);
    CHECK(error_of(dir, "http:\n  max_stream: 3\n").find("unknown key 'max_stream' in http") != std::string::npos);
    CHECK(error_of(dir, "transports: [http, http]\n").find("listed twice") != std::string::npos);
    CHECK(error_of(dir, "transports: [smoke]\n").find("allowed: stdio, http") != std::string::npos);
}

TEST_CASE("http.public_url is the base of page links, anything but an absolute http(s) URL names its place",
          "[config]") {
    TempDir dir;
    CHECK(load_config_file(dir.write("none.yaml", "http:\n  listen: 127.0.0.1:0\n")).http.public_url.empty());
    CHECK(load_config_file(dir.write("a.yaml", "http:\n  public_url: https://gate.example.com\n")).http.public_url ==
          "https://gate.example.com");
    CHECK(load_config_file(dir.write("b.yaml", "http:\n  public_url: http://gate.example.com:8443/mcp-host/\n"))
              .http.public_url == "http://gate.example.com:8443/mcp-host");

    const std::pair<const char*, const char*> refused[] = {
        {"gate.example.com", "names no http or https scheme"},
        {"ftp://gate.example.com", "names no http or https scheme"},
        {"https://gate.example.com/?x=1", "a query has no place in it"},
        {"https://gate.example.com/#top", "a fragment has no place in it"},
        {"https://", "names no host"},
        {"https:///pages", "names no host"},
        {"https://ann@gate.example.com", "user information has no place in it"},
        {"\"https://gate example.com\"", "holds a space"},
    };
    for (const auto& [url, why] : refused) {
        INFO(url);
        const auto error = error_of(dir, std::string("server:\n  name: x\nhttp:\n  public_url: ") + url + "\n");
        CHECK(error.find("gatehouse.yaml:4:15: http.public_url must be an absolute http:// or https:// URL") !=
              std::string::npos);
        CHECK(error.find(why) != std::string::npos);
    }
}

// RFC 8032's first test key: public, so it may live in a test.
constexpr const char* kRfc8032PublicKey = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";

TEST_CASE("the license section: file, license-free families, vendor keys", "[config][license]") {
    TempDir dir;
    const auto file = dir.write("etc/gatehouse.yaml", std::string("data_dir: /var/lib/gh\n"
                                                                  "license:\n"
                                                                  "  file: licenses/shop.json\n"
                                                                  "  free_families: [session, memory]\n"
                                                                  "  vendor_keys:\n"
                                                                  "    acme-2026: ") +
                                                          kRfc8032PublicKey + "\n");
    const auto cfg = load_config_file(file);
    CHECK(cfg.license.configured);
    CHECK(cfg.license.file == dir.path() / "etc/licenses/shop.json");
    CHECK(cfg.license.free_families == std::vector<std::string>{"session", "memory"});
    REQUIRE(cfg.license.vendor_keys.count("acme-2026"));
    CHECK(cfg.license.vendor_keys.at("acme-2026").public_base64() == kRfc8032PublicKey);

    const auto defaults = load_config_file(dir.write("d.yaml", "data_dir: /var/lib/gh\nlicense: {}\n"));
    CHECK(defaults.license.configured);
    CHECK(defaults.license.file == "/var/lib/gh/license.json");
    CHECK(defaults.license.free_families.empty());
    CHECK(defaults.license.vendor_keys.empty());

    CHECK_FALSE(load_config_file(dir.write("none.yaml", "strict: false\n")).license.configured);

    // Several files and a directory, relative to the YAML file like license.file.
    const auto several =
        load_config_file(dir.write("etc/several.yaml", "data_dir: /var/lib/gh\n"
                                                       "license:\n"
                                                       "  files: [acme.json, /opt/globex/license.json]\n"
                                                       "  directory: licenses.d\n"));
    CHECK(several.license.file.empty()); // no default file once files or a directory are named
    CHECK(several.license.files ==
          std::vector<std::filesystem::path>{dir.path() / "etc/acme.json", "/opt/globex/license.json"});
    CHECK(several.license.directory == dir.path() / "etc/licenses.d");
    const auto with_file =
        load_config_file(dir.write("etc/both.yaml", "license:\n  file: one.json\n  directory: ../d\n"));
    CHECK(with_file.license.file == dir.path() / "etc/one.json");
    CHECK(with_file.license.files.empty());
    CHECK(with_file.license.directory == dir.path() / "d");
    CHECK(defaults.license.files.empty());
    CHECK(defaults.license.directory.empty());
}

TEST_CASE("license section mistakes name file:line:column", "[config][license]") {
    TempDir dir;
    const std::string f = (dir.path() / "gatehouse.yaml").string();
    CHECK(error_of(dir, "license:\n  file_list: x\n") ==
          f + ":2:3: unknown key 'file_list' in license (allowed: directory, file, files, free_families, vendor_keys)");
    CHECK(error_of(dir, "license:\n  files: a.json\n") ==
          f + ":2:10: license.files must be a list of license file paths");
    CHECK(error_of(dir, "license:\n  files: {a: b}\n") ==
          f + ":2:10: license.files must be a list of license file paths");
    CHECK(error_of(dir, "license:\n  files: [a.json, [b]]\n") == f + ":2:19: a file in license.files must be a string");
    CHECK(error_of(dir, "license:\n  files: [a.json, '']\n") == f + ":2:19: a file in license.files must not be empty");
    CHECK_THAT(error_of(dir, "license:\n  file: a.json\n  files: [b.json, ./a.json]\n"),
               Catch::StartsWith(f + ":3:19: '") &&
                   Catch::EndsWith("a.json' is named twice in license.file and license.files"));
    CHECK(error_of(dir, "license:\n  directory: [x]\n") == f + ":2:14: license.directory must be a string");
    CHECK(error_of(dir, "license:\n  free_families: memory\n") ==
          f + ":2:18: license.free_families must be a list of family names");
    CHECK_THAT(error_of(dir, "license:\n  free_families: [memory, 'a b']\n"),
               Catch::StartsWith(f + ":2:27: 'a b' in license.free_families is not a family name"));
    CHECK(error_of(dir, "license:\n  free_families: [memory, memory]\n") ==
          f + ":2:27: 'memory' is listed twice in license.free_families");
    CHECK_THAT(error_of(dir, "license:\n  vendor_keys:\n    acme: AAAA\n"),
               Catch::StartsWith(f + ":3:11: license.vendor_keys.acme decodes to 3 bytes"));
    CHECK_THAT(error_of(dir, "license:\n  vendor_keys:\n    acme: '*'\n"),
               Catch::StartsWith(f + ":3:11: license.vendor_keys.acme is neither a PEM PUBLIC KEY block nor base64"));
    CHECK_THAT(error_of(dir, "license:\n  vendor_keys:\n    'a key': AAAA\n"),
               Catch::StartsWith(f + ":3:5: 'a key' is not a key id"));
    CHECK_THAT(error_of(dir, "license:\n  vendor_keys: [a]\n"),
               Catch::StartsWith(f + ":2:16: license.vendor_keys must be a mapping"));
}

TEST_CASE("the embedded default checks licenses and leaves the shipped families license-free", "[config][license]") {
    const auto cfg = gatehouse::config::load_config_text(gatehouse::cli::kEmbeddedConfig, "<embedded>", "/opt/gh");
    CHECK(cfg.license.configured);
    CHECK(cfg.license.free_families == std::vector<std::string>{"session", "sessions", "memory"});
    CHECK(cfg.license.vendor_keys.empty());
}

TEST_CASE("a domain's exposure: listed by default, on_demand when asked", "[config]") {
    const auto cfg = gatehouse::config::load_config_text(
        "domains:\n  a:\n    exposure: on_demand\n  b:\n    exposure: listed\n  c: true\n", "<text>", "/");
    CHECK(cfg.domains.at("a").on_demand);
    CHECK_FALSE(cfg.domains.at("b").on_demand);
    CHECK_FALSE(cfg.domains.at("c").on_demand);
    const auto embedded = gatehouse::config::load_config_text(gatehouse::cli::kEmbeddedConfig, "<embedded>", "/opt/gh");
    CHECK(embedded.domains.at("sessions").on_demand);
}

TEST_CASE("metrics, audit, tracing and log_format are read, and their mistakes named where they are",
          "[config][metrics]") {
    TempDir dir;
    const auto file =
        dir.write("gatehouse.yaml", "metrics:\n  path: /m\n  listen: 10.0.0.5:9464\n  allow: [10.0.0.0/8, '::1']\n"
                                    "audit:\n  file: logs/audit.jsonl\n  include_arguments: true\n"
                                    "tracing:\n  otlp_endpoint: http://127.0.0.1:4318/v1/traces\n"
                                    "  service_name: gate-a\nlog_format: json\n");
    const auto cfg = load_config_file(file);
    CHECK(cfg.metrics.enabled);
    CHECK(cfg.metrics.path == "/m");
    CHECK(cfg.metrics.listen_host == "10.0.0.5");
    CHECK(cfg.metrics.listen_port == 9464);
    CHECK(cfg.metrics.allow == std::vector<std::string>{"10.0.0.0/8", "::1"});
    CHECK(cfg.audit.file == dir.path() / "logs/audit.jsonl");
    CHECK(cfg.audit.include_arguments);
    CHECK(cfg.tracing.otlp_endpoint == "http://127.0.0.1:4318/v1/traces");
    CHECK(cfg.tracing.service_name == "gate-a");
    CHECK(cfg.log_format == "json");

    struct Case {
        const char* yaml;
        const char* words;
    };
    const Case cases[] = {
        {"metrics:\n  listen: 0.0.0.0:9464\n", ":2:11: metrics.listen on 0.0.0.0 (not loopback) needs metrics.allow"},
        {"metrics:\n  allow: [example.com]\n",
         ":2:11: metrics.allow: 'example.com' is not an IP address or a CIDR block"},
        {"metrics:\n  allow: [10.0.0.0/40]\n", ":2:11: metrics.allow: '10.0.0.0/40'"},
        {"metrics:\n  path: metrics\n", ":2:9: metrics.path must be a path such as /metrics"},
        {"metrics:\n  path: /status\n", ":2:9: metrics.path cannot be /status, which the host serves itself"},
        {"metrics:\n  path: /mcp\n", ":2:3: metrics.path /mcp is also http.path"},
        {"metrics:\n  listen: nowhere\n", ":2:11: metrics.listen: 'nowhere' is not host:port"},
        {"audit:\n  include_arguments: true\n", ":2:3: audit needs file"},
        {"tracing:\n  otlp_endpoint: https://collector:4318\n", ":2:18: tracing.otlp_endpoint must be an http:// URL"},
        {"log_format: xml\n", ":1:13: log_format must be text or json"},
    };
    for (const auto& c : cases) {
        INFO(c.yaml);
        CHECK_THAT(error_of(dir, c.yaml), Catch::Contains(c.words));
    }
}

TEST_CASE("upstreams: each a family with a command or a URL, its name hook and gate settings, mistakes named",
          "[config][upstream]") {
    TempDir dir;
    const auto file = dir.write(
        "gatehouse.yaml",
        "upstreams:\n"
        "  - name: mem\n    command: [npx, -y, server-memory]\n    env: {MEMORY_FILE_PATH: /tmp/m.jsonl}\n"
        "    cwd: work\n    deny: [delete_entities]\n    risk: read\n    rules: Ask first.\n"
        "    required_scopes: [notes]\n    tool_timeout_ms: 5000\n"
        "  - name: everything\n    url: http://127.0.0.1:3001/mcp\n    names: none\n    token_env: EVERYTHING_TOKEN\n"
        "  - name: reports\n    url: https://reports.example/mcp\n"
        "    tls: {ca_file: ca.pem, server_name: reports.internal}\n"
        "    oauth: {client_id: gh, client_secret_file: reports.secret, scope: 'a b', "
        "token_url: https://auth.example/token, authorization_servers: [https://auth.example]}\n");
    const auto cfg = load_config_file(file);
    REQUIRE(cfg.upstreams.size() == 3);
    CHECK(cfg.upstreams[2].tls.ca_file == dir.path() / "ca.pem");
    CHECK(cfg.upstreams[2].tls.server_name == "reports.internal");
    CHECK(cfg.upstreams[2].tls.verify);
    const auto& oauth = cfg.upstreams[2].oauth;
    CHECK(oauth.configured());
    CHECK(oauth.client_id == "gh");
    CHECK(oauth.client_secret_file == dir.path() / "reports.secret");
    CHECK(oauth.scope == "a b");
    CHECK(oauth.token_url == "https://auth.example/token");
    CHECK(oauth.resource.empty());
    CHECK(oauth.authorization_servers == std::vector<std::string>{"https://auth.example"});
    CHECK_FALSE(cfg.upstreams[1].oauth.configured());
    const auto& mem = cfg.upstreams[0];
    CHECK(mem.name == "mem");
    CHECK(mem.command == std::vector<std::string>{"npx", "-y", "server-memory"});
    CHECK(mem.env.at("MEMORY_FILE_PATH") == "/tmp/m.jsonl");
    CHECK(mem.cwd == dir.path() / "work");
    CHECK(mem.names == "{upstream}_{name}");
    CHECK(mem.deny == std::vector<std::string>{"delete_entities"});
    CHECK(mem.risk == "read");
    CHECK(mem.rules == "Ask first.");
    CHECK(mem.required_scopes == std::vector<std::string>{"notes"});
    CHECK(mem.tool_timeout_ms == 5000u);
    CHECK(mem.gated);
    const auto& everything = cfg.upstreams[1];
    CHECK(everything.url == "http://127.0.0.1:3001/mcp");
    CHECK(everything.names == "{name}");
    CHECK(everything.token_env == "EVERYTHING_TOKEN");

    struct Case {
        const char* yaml;
        const char* words;
    };
    const Case cases[] = {
        {"upstreams:\n  - command: [x]\n", ":2:5: an upstreams entry needs a name"},
        {"upstreams:\n  - name: Mem\n    command: [x]\n", ":2:11: an upstreams entry's name must be 1-64 of lowercase"},
        {"upstreams:\n  - name: m\n", ":2:5: upstream 'm' needs exactly one of command"},
        {"upstreams:\n  - name: m\n    command: [x]\n    url: http://h/mcp\n", "needs exactly one of command"},
        {"upstreams:\n  - name: m\n    url: ftp://h/mcp\n",
         ":3:10: upstream 'm'.url must be an http:// or https:// URL"},
        {"upstreams:\n  - name: m\n    command: []\n", ":3:14: upstream 'm'.command must be a list"},
        {"upstreams:\n  - name: m\n    url: http://me:pw@h/mcp\n", ":3:10: upstream 'm'.url holds user information"},
        {"upstreams:\n  - name: m\n    command: [x]\n    oauth: {client_id: c, client_secret_env: S}\n",
         ":4:12: upstream 'm'.oauth is the host's client at a url's authorization server: it needs url"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    token_env: T\n    oauth: {client_id: c, client_secret_env: "
         "S}\n",
         "upstream 'm' sets both oauth and a token of its own"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    oauth: {client_secret_env: S}\n", "oauth needs client_id"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    oauth: {client_id: c}\n",
         "needs exactly one of client_secret_file and client_secret_env"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    oauth: {client_id: c, client_secret_env: S, token_url: "
         "ftp://a/t}\n",
         "oauth.token_url must be an http:// or https:// URL with no user information"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    oauth: {client_id: c, client_secret_env: S, grant: x}\n",
         "grant"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    oauth: {client_id: c, client_secret_env: S, "
         "authorization_servers: ['https://u:p@as/']}\n",
         "oauth.authorization_servers holds issuer URLs (http:// or https://, no user information), not "
         "'https://u:p@as/'"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    oauth: {client_id: c, client_secret_env: S, "
         "authorization_servers: []}\n",
         "oauth.authorization_servers is empty; list the issuers to trust, or leave it out"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    env: {A: b}\n", ":4:10: upstream 'm'.env is a command's"},
        {"upstreams:\n  - name: m\n    command: [x]\n    names: '{upstream}'\n", "must hold {name} exactly once"},
        {"upstreams:\n  - name: m\n    command: [x]\n    names: 'a/{name}'\n", "only letters, digits"},
        {"upstreams:\n  - name: m\n    command: [x]\n    risk: huge\n", ":4:11: upstream 'm'.risk must be one of"},
        {"upstreams:\n  - name: m\n    command: [x]\n    colour: red\n", ":4:5: unknown key 'colour' in upstream 'm'"},
        {"upstreams:\n  - name: m\n    command: [x]\n  - name: m\n    url: http://h/\n",
         ":4:11: upstream 'm' is listed twice (first at line 2)"},
        {"upstreams:\n  - name: m\n    command: [x]\n    token_file: t\n", "bearer token is for a url"},
        {"upstreams:\n  - name: m\n    url: http://h/\n    tls: {ca_file: ca.pem}\n",
         ":4:10: upstream 'm'.tls applies to an https:// url only"},
        {"upstreams:\n  - name: m\n    url: https://h/\n    tls: {cert_file: c.pem}\n",
         "upstream 'm'.tls needs cert_file and key_file together"},
        {"upstreams:\n  - name: m\n    url: https://h/\n    tls: {pin: x}\n", "unknown key 'pin' in upstream 'm'.tls"},
    };
    for (const auto& c : cases) {
        INFO(c.yaml);
        CHECK_THAT(error_of(dir, c.yaml), Catch::Contains(c.words));
    }
}

TEST_CASE("session.max_sessions_per_principal is read, bounded, and 64 unless set", "[config]") {
    TempDir dir;
    const auto set = load_config_file(dir.write(
        "a.yaml", "session:\n  backend: memory\n  pinned: {store: s, user: u}\n  max_sessions_per_principal: 5\n"));
    CHECK(set.session.max_sessions_per_principal == 5);
    const auto unset =
        load_config_file(dir.write("b.yaml", "session:\n  backend: memory\n  pinned: {store: s, user: u}\n"));
    CHECK(unset.session.max_sessions_per_principal == 64);
    CHECK(error_of(dir, "session:\n  pinned: {store: s, user: u}\n  max_sessions_per_principal: 0\n")
              .find("session.max_sessions_per_principal") != std::string::npos);
}

TEST_CASE("tasks.max_kept_per_principal is read, bounded, and 64 unless set", "[config]") {
    TempDir dir;
    CHECK(load_config_file(dir.write("a.yaml", "tasks:\n  max_kept_per_principal: 7\n")).tasks.max_kept_per_principal ==
          7);
    CHECK(load_config_file(dir.write("b.yaml", "tasks: {}\n")).tasks.max_kept_per_principal == 64);
    CHECK(error_of(dir, "tasks:\n  max_kept_per_principal: 0\n").find("tasks.max_kept_per_principal") !=
          std::string::npos);
}
