// plugin.hpp's per-plugin state and registration window, in process: init
// makes a state each time it runs (two hosts, two states), every handler gets
// its own instance's, shutdown destroys it, and a declaration after the host
// took the descriptor throws instead of going unpublished.
#include "plugins/call_environment.hpp"
#include "plugins/host_api.hpp"

#include <gatehouse/plugin.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

int live_counters = 0;

struct Counter {
    explicit Counter(std::string name) : name(std::move(name)) { ++live_counters; }
    ~Counter() { --live_counters; }
    Counter(const Counter&) = delete;
    Counter& operator=(const Counter&) = delete;
    std::string name;
    int calls = 0;
};

class QuietCall final : public gatehouse::plugins::CallEnvironment {
public:
    bool cancelled() const override { return false; }
    void log(int32_t, std::string_view, std::string_view) override {}
    void progress(double, double, std::string_view) override {}
    std::string_view context_json() override { return "{}"; }
};

gh::Plugin<Counter>& counting_plugin() {
    static gh::Plugin<Counter> plugin{{.name = "test-counter", .version = "1.0.0", .family = "counter"}};
    static const bool declared = [] {
        plugin.on_init([](const gh::Json& config) {
            return std::make_unique<Counter>(config["settings"].value("name", std::string()));
        });
        plugin.tool({
            .name = "count",
            .handler =
                [](Counter& counter, gh::Call&) {
                    return gh::Result::structured({{"name", counter.name}, {"calls", ++counter.calls}});
                },
        });
        plugin.tool({
            .name = "stateless",
            .handler = [](gh::Call&) { return gh::Result::text("no state needed"); },
        });
        return true;
    }();
    (void)declared;
    return plugin;
}

void* init_with(const gh_plugin_desc* desc, const std::string& name) {
    const std::string config = gh::Json{{"data_dir", "/tmp"}, {"settings", {{"name", name}}}}.dump();
    void* state = nullptr;
    gh_sink error;
    REQUIRE(desc->init(gatehouse::plugins::host_api(), gh::view(std::string_view(config)), &state, &error) ==
            GH_STATUS_OK);
    REQUIRE(state != nullptr);
    return state;
}

gh::Json call_tool(const gh_plugin_desc* desc, std::size_t index, void* state) {
    QuietCall environment;
    gh_call call{&environment, "counter", {}};
    gh_sink out;
    const gh_tool_desc* tool = desc->tools[index];
    REQUIRE(tool->call(state, tool->tool_data, &call, gh::view(std::string_view("{}")), &out) == GH_STATUS_OK);
    return gh::Json::parse(out.bytes);
}

} // namespace

TEST_CASE("each init makes its own state, handed to the handlers and destroyed at shutdown", "[abi][state]") {
    auto& plugin = counting_plugin();
    const gh_plugin_desc* desc =
        plugin.descriptor(gatehouse::plugins::host_api(),
                          [](const gh_host_api* api, gh_str config, void** state, gh_sink* error) noexcept {
                              return gh::Plugin<Counter>::init(counting_plugin(), api, config, state, error);
                          });
    void* first = init_with(desc, "first");
    void* second = init_with(desc, "second");
    CHECK(first != second);
    CHECK(live_counters == 2);

    CHECK(call_tool(desc, 0, first)["structuredContent"] == gh::Json{{"name", "first"}, {"calls", 1}});
    CHECK(call_tool(desc, 0, first)["structuredContent"] == gh::Json{{"name", "first"}, {"calls", 2}});
    CHECK(call_tool(desc, 0, second)["structuredContent"] == gh::Json{{"name", "second"}, {"calls", 1}});
    CHECK(call_tool(desc, 1, second)["content"][0]["text"] == "no state needed");

    desc->shutdown(first);
    CHECK(live_counters == 1);
    CHECK(call_tool(desc, 0, second)["structuredContent"] == gh::Json{{"name", "second"}, {"calls", 2}});
    desc->shutdown(second);
    CHECK(live_counters == 0);
}

TEST_CASE("a stateful handler called without init is a fault inside the plugin, not a crash", "[abi][state]") {
    auto& plugin = counting_plugin();
    const gh_plugin_desc* desc = plugin.descriptor(gatehouse::plugins::host_api(), nullptr);
    QuietCall environment;
    gh_call call{&environment, "counter", {}};
    gh_sink out;
    const gh_tool_desc* tool = desc->tools[0];
    CHECK(tool->call(nullptr, tool->tool_data, &call, gh::view(std::string_view("{}")), &out) == GH_STATUS_INTERNAL);
    CHECK_THAT(out.bytes, Catch::Contains("before init"));
}

TEST_CASE("declaring after the host took the descriptor throws, naming what was declared", "[abi][state]") {
    static gh::Plugin plugin{{.name = "test-late", .version = "1.0.0", .family = "late"}};
    plugin.tool({.name = "early", .handler = [](gh::Call&) { return gh::Result::text("in time"); }});
    const gh_plugin_desc* desc = plugin.descriptor(gatehouse::plugins::host_api(), nullptr);
    CHECK(desc->tool_count == 1);
    CHECK_THROWS_WITH(plugin.tool({.name = "late", .handler = [](gh::Call&) { return gh::Result::text("never"); }}),
                      Catch::Contains("tool 'late' is declared after the host took the descriptor"));
    CHECK_THROWS_AS(plugin.prompt({.name = "late_prompt"}), std::logic_error);
    CHECK_THROWS_AS(plugin.command({.name = "late-verb"}), std::logic_error);
    // The descriptor the host holds is unchanged, and asking again gives the same.
    CHECK(plugin.descriptor(gatehouse::plugins::host_api(), nullptr)->tool_count == 1);
}

TEST_CASE("a command's exit status and output cross the ABI, an exception becomes exit 1", "[abi][state]") {
    static gh::Plugin plugin{{.name = "test-commands", .version = "1.0.0", .family = "commands"}};
    plugin.command({.name = "echo-args", .usage = "WORDS...", .run = [](gh::Command& command) {
                        for (const auto& word : command.args())
                            command.out(word + "\n");
                        command.err("done\n");
                        return 3;
                    }});
    plugin.command({.name = "wrong", .run = [](gh::Command&) -> int { throw gh::InvalidArguments("needs a word"); }});
    const gh_plugin_desc* desc = plugin.descriptor(gatehouse::plugins::host_api(), nullptr);
    REQUIRE(desc->command_count == 2);
    const gh_command_desc* echo = desc->commands[0];
    CHECK(gh::view(echo->name) == "echo-args");
    CHECK(gh::view(echo->usage) == "WORDS...");
    const gh_str words[] = {gh::view(std::string_view("a")), gh::view(std::string_view("b c"))};
    const std::string context = R"({"verb":"echo-args","config_file":"x.yaml","data_dir":"/tmp"})";
    gh_sink out, err;
    CHECK(echo->run(nullptr, echo->command_data, gh::view(std::string_view(context)), words, 2, &out, &err) == 3);
    CHECK(out.bytes == "a\nb c\n");
    CHECK(err.bytes == "done\n");

    const gh_command_desc* wrong = desc->commands[1];
    gh_sink out2, err2;
    CHECK(wrong->run(nullptr, wrong->command_data, gh::view(std::string_view(context)), nullptr, 0, &out2, &err2) == 2);
    CHECK(err2.bytes == "gatehouse wrong: needs a word\n");
}
