// The license through the real binary over stdio: the "gated" fixture family
// is licensed, "echo" is declared license-free, and the license file is
// swapped between calls while the host runs.
#include "license_minter.hpp"
#include "stdio_host.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using gatehouse::test::LicenseFields;
using gatehouse::test::mint_license;
using gatehouse::test::VendorKeyPair;
using nlohmann::json;

namespace {

struct LicensedScene {
    fs::path dir, config, license;
    VendorKeyPair vendor;

    LicensedScene() {
        dir = fs::temp_directory_path() / ("gatehouse-license-stdio-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        config = dir / "gatehouse.yaml";
        license = dir / "license.json";
        std::ofstream(config) << "plugin_dir: " << GATEHOUSE_TEST_PLUGIN_DIR << "\n"
                              << "data_dir: " << (dir / "data").string() << "\n"
                              << "plugins:\n  - " << GATEHOUSE_SESSION_PLUGIN << "\n  - gated.so\n  - echo.so\n"
                              << "domains:\n  echo: {prefix: e_}\n" // both families have a whoami
                              << "session:\n  backend: memory\n  pinned: {store: shop, user: ann}\n"
                              << "  grants: {shop: {ann: [orders.read]}}\n"
                              << "license:\n  file: license.json\n  free_families: [session, echo]\n"
                              << "  vendor_keys:\n    acme-2026: " << vendor.public_base64() << "\n";
    }
    ~LicensedScene() { fs::remove_all(dir); }

    void install(const LicenseFields& fields) {
        std::ofstream(dir / "license.new") << mint_license(vendor, fields);
        fs::rename(dir / "license.new", license);
    }
};

std::string code_of(const json& result) {
    if (!result.value("isError", false)) return "";
    return result["structuredContent"].value("code", "");
}

json structured(const json& result) {
    INFO(result.dump());
    REQUIRE_FALSE(result.value("isError", false));
    return result["structuredContent"];
}

} // namespace

TEST_CASE("the license over stdio: missing, not covered, valid, expired, fixed", "[gate][stdio][license]") {
    LicensedScene scene;
    StdioHost host(scene.config.string(), {{"GATEHOUSE_PRINCIPAL", "alice"}});

    // The license comes first: even without a session the refusal is about the license.
    CHECK(code_of(host.call("count", json::object())) == "LICENSE_MISSING");

    const std::string handle = structured(host.call("session_connect", {{"topic", "orders"}}))["session"];
    auto missing = host.call("count", {{"session", handle}});
    REQUIRE(code_of(missing) == "LICENSE_MISSING");
    CHECK(missing["structuredContent"]["next"]["family"] == "gated");
    CHECK(missing["structuredContent"]["next"]["action"] == "tell_the_person");

    // A license-free family is unaffected, and so are the session tools.
    CHECK(structured(host.call("e_echo", {{"session", handle}, {"text", "hi"}}))["text"] == "hi");

    LicenseFields other;
    other.families = {"ledger"};
    scene.install(other);
    auto uncovered = host.call("count", {{"session", handle}});
    REQUIRE(code_of(uncovered) == "LICENSE_NOT_COVERED");
    CHECK(uncovered["structuredContent"]["next"]["licensed_families"] == json::array({"ledger"}));

    scene.install(LicenseFields{});
    // The first count to run: none of the refused ones did.
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 1);

    LicenseFields expired;
    expired.issued = "2020-01-01T00:00:00Z";
    expired.expires = "2021-01-01T00:00:00Z";
    scene.install(expired);
    CHECK(code_of(host.call("count", {{"session", handle}})) == "LICENSE_EXPIRED");
    CHECK(structured(host.call("e_echo", {{"session", handle}, {"text", "still"}}))["text"] == "still");

    scene.install(LicenseFields{});
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 2);

    // After the license, the rest of the gate still holds.
    CHECK(code_of(host.call("count", {{"session", "0123456789abcdef0123456789abcdef"}})) == "NOT_CONNECTED");

    std::ofstream(scene.license) << "{\"format\": \"gatehouse-license-v1\"}";
    CHECK(code_of(host.call("count", {{"session", handle}})) == "LICENSE_INVALID");

    host.stop();
    // The log says why; no answer carries the key or the license file's path.
    CHECK_THAT(host.stderr_text(), Catch::Contains("license") && Catch::Contains("is missing"));
    CHECK(host.stdout_text().find(scene.vendor.public_base64()) == std::string::npos);
    CHECK(host.stdout_text().find(scene.license.string()) == std::string::npos);
}

namespace {

// Two vendors: acme licenses the "gated" fixture family in a listed file,
// globex the "echo" family in a file in the license directory. Only the
// session tools are license-free.
struct TwoVendorScene {
    fs::path dir, config, acme_file, shelf;
    VendorKeyPair acme, globex;

    TwoVendorScene() {
        dir = fs::temp_directory_path() / ("gatehouse-licenses-stdio-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir / "licenses.d");
        config = dir / "gatehouse.yaml";
        acme_file = dir / "acme.json";
        shelf = dir / "licenses.d";
        std::ofstream(config) << "plugin_dir: " << GATEHOUSE_TEST_PLUGIN_DIR << "\n"
                              << "data_dir: " << (dir / "data").string() << "\n"
                              << "plugins:\n  - " << GATEHOUSE_SESSION_PLUGIN << "\n  - gated.so\n  - echo.so\n"
                              << "domains:\n  echo: {prefix: e_}\n"
                              << "session:\n  backend: memory\n  pinned: {store: shop, user: ann}\n"
                              << "  grants: {shop: {ann: [orders.read]}}\n"
                              << "license:\n  files: [acme.json]\n  directory: licenses.d\n"
                              << "  free_families: [session]\n"
                              << "  vendor_keys:\n    acme-2026: " << acme.public_base64()
                              << "\n    globex-1: " << globex.public_base64() << "\n";
    }
    ~TwoVendorScene() { fs::remove_all(dir); }

    static LicenseFields gated_license() { return LicenseFields{}; }
    static LicenseFields echo_license() {
        LicenseFields f;
        f.families = {"echo"};
        f.key_id = "globex-1";
        return f;
    }
    void put(const fs::path& where, const VendorKeyPair& key, const LicenseFields& fields) {
        std::ofstream(dir / "next.tmp") << mint_license(key, fields);
        fs::rename(dir / "next.tmp", where);
    }
};

} // namespace

TEST_CASE("licenses from two vendors over stdio: each family served by its own file, changes seen live",
          "[gate][stdio][license]") {
    TwoVendorScene scene;
    scene.put(scene.acme_file, scene.acme, scene.gated_license());
    scene.put(scene.shelf / "globex.json", scene.globex, scene.echo_license());
    StdioHost host(scene.config.string(), {{"GATEHOUSE_PRINCIPAL", "alice"}, {"GATEHOUSE_LOG", "info"}});

    const std::string handle = structured(host.call("session_connect", {{"topic", "orders"}}))["session"];
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 1);
    CHECK(structured(host.call("e_echo", {{"session", handle}, {"text", "hi"}}))["text"] == "hi");

    // One vendor's file removed while the host runs: only its family is refused.
    fs::remove(scene.acme_file);
    auto refused = host.call("count", {{"session", handle}});
    REQUIRE(code_of(refused) == "LICENSE_NOT_COVERED");
    CHECK(refused["structuredContent"]["next"]["licensed_families"] == json::array({"echo"}));
    CHECK(structured(host.call("e_echo", {{"session", handle}, {"text", "still"}}))["text"] == "still");

    // Dropped into the directory: served on the next call, no restart.
    scene.put(scene.shelf / "acme.json", scene.acme, scene.gated_license());
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 2);

    // An expired license for the same family, listed first, does not hide the valid one.
    LicenseFields expired = scene.gated_license();
    expired.issued = "2020-01-01T00:00:00Z";
    expired.expires = "2021-01-01T00:00:00Z";
    scene.put(scene.acme_file, scene.acme, expired);
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 3);
    fs::remove(scene.shelf / "acme.json");
    CHECK(code_of(host.call("count", {{"session", handle}})) == "LICENSE_EXPIRED");

    // Every file gone: nothing is installed for either family.
    fs::remove(scene.acme_file);
    fs::remove(scene.shelf / "globex.json");
    CHECK(code_of(host.call("count", {{"session", handle}})) == "LICENSE_MISSING");
    CHECK(code_of(host.call("e_echo", {{"session", handle}, {"text", "x"}})) == "LICENSE_MISSING");
    // Installed again: the count goes on from 3, so nothing ran while refused.
    scene.put(scene.acme_file, scene.acme, scene.gated_license());
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 4);

    host.stop();
    // The start-up log says which file covers which family.
    CHECK_THAT(host.stderr_text(),
               Catch::Contains("family 'gated' is covered by " + scene.acme_file.string()) &&
                   Catch::Contains("family 'echo' is covered by " + (scene.shelf / "globex.json").string()));
}

TEST_CASE("the license covers a family's resources, prompts, completions and its tools the gate exempts",
          "[gate][stdio][license]") {
    const fs::path dir = fs::temp_directory_path() / ("gatehouse-license-reach-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    VendorKeyPair vendor;
    // conformance ships resources, a template and prompts with completions;
    // the operator took the gate off gated's whoami. Neither family is free.
    std::ofstream(dir / "gatehouse.yaml")
        << "plugin_dir: " << GATEHOUSE_TEST_PLUGIN_DIR << "\n"
        << "data_dir: " << (dir / "data").string() << "\n"
        << "plugins:\n  - " << GATEHOUSE_SESSION_PLUGIN << "\n  - gated.so\n  - conformance.so\n  - echo.so\n"
        << "domains:\n  gated:\n    tools:\n      whoami: {gated: false}\n"
        << "  echo: {exposure: on_demand, prefix: e_}\n"
        << "session:\n  backend: memory\n  pinned: {store: shop, user: ann}\n"
        << "license:\n  file: license.json\n  free_families: [session, echo]\n"
        << "  vendor_keys:\n    acme-2026: " << vendor.public_base64() << "\n";
    StdioHost host((dir / "gatehouse.yaml").string(), {{"GATEHOUSE_PRINCIPAL", "alice"}});

    const auto refused = [](const json& answer) {
        INFO(answer.dump());
        REQUIRE(answer.contains("error"));
        CHECK(answer["error"]["code"] == -32603);
        CHECK(answer["error"]["data"]["next"]["family"] == "conformance");
        return answer["error"]["data"].value("code", "");
    };
    CHECK(refused(host.request("resources/read", {{"uri", "test://static-text"}})) == "LICENSE_MISSING");
    CHECK(refused(host.request("resources/read", {{"uri", "test://template/7/data"}})) == "LICENSE_MISSING");
    CHECK(refused(host.request("prompts/get", {{"name", "test_simple_prompt"}})) == "LICENSE_MISSING");
    CHECK(refused(host.request("completion/complete",
                               {{"ref", {{"type", "ref/prompt"}, {"name", "test_prompt_with_arguments"}}},
                                {"argument", {{"name", "arg1"}, {"value", "a"}}}})) == "LICENSE_MISSING");
    // Exempt from the session checks, not from the license.
    CHECK(code_of(host.call("whoami", json::object())) == "LICENSE_MISSING");
    // The session family is free: a session still opens, and listing is no use of the family.
    const std::string handle = structured(host.call("session_connect", {{"topic", "orders"}}))["session"];
    // The host's own tools belong to no family: they need no license, and
    // what call_tool forwards meets its own family's.
    CHECK_FALSE(host.call("list_domains", json::object()).value("isError", false));
    CHECK(structured(host.call("call_tool", {{"name", "e_echo"},
                                             {"arguments", {{"session", handle}, {"text", "hi"}}}}))["text"] == "hi");
    CHECK(code_of(host.call("call_tool", {{"name", "whoami"}, {"arguments", json::object()}})) == "LICENSE_MISSING");
    CHECK(host.request("resources/list", json::object()).contains("result"));

    LicenseFields both;
    both.families = {"gated", "conformance"};
    std::ofstream(dir / "license.new") << mint_license(vendor, both);
    fs::rename(dir / "license.new", dir / "license.json");
    const auto read = host.request("resources/read", {{"uri", "test://static-text"}});
    INFO(read.dump());
    CHECK(read.contains("result"));
    CHECK(host.request("prompts/get", {{"name", "test_simple_prompt"}}).contains("result"));
    CHECK_FALSE(host.call("whoami", json::object()).value("isError", false));
    host.stop();
    fs::remove_all(dir);
}
