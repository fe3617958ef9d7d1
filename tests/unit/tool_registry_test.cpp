#include "config/config_loader.hpp"
#include "plugins/plugin_loader.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

using gatehouse::plugins::LoadReport;
using gatehouse::plugins::PluginLoader;
using gatehouse::plugins::ToolRegistry;

namespace {

std::unique_ptr<ToolRegistry> load(const std::string& rest) {
    auto cfg = gatehouse::config::load_config_text(
        "plugin_dir: " + gatehouse::test::plugin_dir().string() + "\n" + rest, "test.yaml", "/");
    LoadReport report;
    auto registry = PluginLoader::load(cfg, report);
    REQUIRE(report.failures.empty());
    return registry;
}

std::vector<std::string> names(const ToolRegistry& registry) {
    std::vector<std::string> out;
    for (const auto* t : registry.ordered())
        out.push_back(t->name);
    return out;
}

} // namespace

TEST_CASE("tools are ordered by published name, whatever the load order", "[registry]") {
    auto a = load("plugins: [echo.so, serial.so]\n");
    auto b = load("plugins: [serial.so, echo.so]\n");
    const auto order = names(*a);
    CHECK(order == names(*b));
    CHECK(std::is_sorted(order.begin(), order.end()));
    CHECK(order.size() == 9);
    // Families keep the order they were loaded in.
    CHECK(a->families().front().family == "echo");
    CHECK(b->families().front().family == "serial");
}

TEST_CASE("the fingerprint follows the published tool set", "[registry]") {
    auto a = load("plugins: [echo.so, serial.so]\n");
    auto b = load("plugins: [serial.so, echo.so]\n");
    auto fewer = load("plugins: [echo.so]\n");
    auto renamed = load("plugins: [echo.so, serial.so]\ndomains: {serial: {prefix: s_}}\n");
    CHECK_FALSE(a->fingerprint().empty());
    CHECK(a->fingerprint() == b->fingerprint());
    CHECK(a->fingerprint() != fewer->fingerprint());
    CHECK(a->fingerprint() != renamed->fingerprint());
    CHECK(renamed->has_tool("s_overlap"));
    CHECK_FALSE(renamed->has_tool("overlap"));
}

TEST_CASE("find answers only published names", "[registry]") {
    auto r = load("plugins: [echo.so]\ndomains: {echo: {prefix: e.}}\n");
    CHECK(r->find("e.echo"));
    CHECK_FALSE(r->find("echo"));
    CHECK_FALSE(r->find(""));
    CHECK(r->families().at(0).prefix == "e.");
    CHECK(r->families().at(0).tools.size() == 8);
}
