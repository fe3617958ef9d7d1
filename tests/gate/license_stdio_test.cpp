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
    CHECK(structured(host.call("calls", json::object()))["count"] == 0); // nothing ran

    scene.install(LicenseFields{});
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
