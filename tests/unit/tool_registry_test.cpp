#include "config/config_loader.hpp"
#include "plugins/live_registry.hpp"
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

TEST_CASE("a live registry swaps whole registries: a reader keeps the one it took, watchers hear what changed",
          "[registry]") {
    using gatehouse::plugins::LiveRegistry;
    using gatehouse::plugins::RegistryChanges;
    std::shared_ptr<const ToolRegistry> both = load("plugins: [echo.so, serial.so]\n");
    LiveRegistry live(both);
    std::vector<RegistryChanges> heard;
    live.watch([&](const ToolRegistry&, const RegistryChanges& changes) { heard.push_back(changes); });

    const auto taken = live.current();
    const auto* echo_tool = taken->find("echo");
    REQUIRE(echo_tool);
    // Without the serial family: the echo family's entry is the same object in both.
    auto without = gatehouse::plugins::with_family(*taken, "serial", nullptr);
    CHECK(without->entry("serial") == nullptr);
    CHECK(without->entry("echo") == taken->entry("echo"));
    {
        auto lock = live.change_lock();
        live.publish(without, lock);
    }
    CHECK(live.current() == without);
    REQUIRE(heard.size() == 1);
    CHECK(heard[0].tools);
    CHECK_FALSE(heard[0].prompts);
    // What was taken before the change still reads as it did.
    CHECK(taken->find("echo") == echo_tool);
    CHECK(taken->families().size() == 2);
    CHECK(live.current()->families().size() == 1);

    // Back again: added at the end, as a family that joins.
    auto again = gatehouse::plugins::with_family(*live.current(), "serial", both->entries()[1]);
    CHECK(again->fingerprint() == both->fingerprint());
    {
        auto lock = live.change_lock();
        live.publish(again, lock);
        // The same registry once more: nothing changed.
        live.publish(again, lock);
    }
    REQUIRE(heard.size() == 3);
    CHECK(heard[1].tools);
    CHECK_FALSE(heard[2].any());

    live.close();
    {
        auto lock = live.change_lock();
        CHECK(live.closed(lock));
        live.publish(without, lock);
    }
    CHECK(live.current() == again); // dropped after close
    CHECK(heard.size() == 3);
}
