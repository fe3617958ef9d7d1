// ABI 1.1 grew gh_host_api and gh_plugin_desc by appending: V1-sized structs
// must still read, with the new fields as "absent".
#include "plugins/abi_struct.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/host_api.hpp"

#include <gatehouse/plugin.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

using gatehouse::plugins::read_abi_struct;

TEST_CASE("a V1 plugin descriptor reads with no critical_items", "[abi]") {
    std::vector<unsigned char> v1(GH_PLUGIN_DESC_SIZE_V1, 0);
    const uint32_t size = GH_PLUGIN_DESC_SIZE_V1, abi = (1u << 16);
    std::memcpy(v1.data(), &size, 4);
    std::memcpy(v1.data() + 4, &abi, 4);
    std::string why;
    auto desc = read_abi_struct<gh_plugin_desc>(v1.data(), why);
    REQUIRE(desc);
    CHECK(desc->critical_items == nullptr);
    CHECK(GH_PLUGIN_DESC_SIZE_V2 > GH_PLUGIN_DESC_SIZE_V1);
}

TEST_CASE("GH_HAS sees the session functions only in a V2 host table", "[abi]") {
    const gh_host_api* api = gatehouse::plugins::host_api();
    CHECK(api->struct_size == GH_HOST_API_SIZE_V5);
    CHECK(GH_HAS(api, session_open));
    CHECK(GH_HAS(api, critical_read));
    CHECK(GH_HAS(api, notify_changed));
    CHECK(GH_HAS(api, input_responses));
    CHECK(GH_HAS(api, request_state));
    CHECK(GH_HAS(api, state_erase));
    CHECK(GH_HAS(api, state_take));
    CHECK(GH_HAS(api, store_credentials));
    gh_host_api v4 = *api;
    v4.struct_size = GH_HOST_API_SIZE_V4; // what a 1.3 host hands out
    CHECK(GH_HAS(&v4, state_erase));
    CHECK_FALSE(GH_HAS(&v4, state_take));
    CHECK_FALSE(GH_HAS(&v4, store_credentials));
    gh_host_api v3 = *api;
    v3.struct_size = GH_HOST_API_SIZE_V3; // what a 1.2 host hands out
    CHECK(GH_HAS(&v3, notify_changed));
    CHECK_FALSE(GH_HAS(&v3, input_responses));
    CHECK_FALSE(GH_HAS(&v3, request_state));
    CHECK_FALSE(GH_HAS(&v3, state_get));
    CHECK_FALSE(GH_HAS(&v3, state_erase));
    gh_host_api v2 = *api;
    v2.struct_size = GH_HOST_API_SIZE_V2; // what a 1.1 host hands out
    CHECK(GH_HAS(&v2, critical_read));
    CHECK_FALSE(GH_HAS(&v2, notify_changed));
    gh_host_api old = *api;
    old.struct_size = GH_HOST_API_SIZE_V1; // what a 1.0 host hands out
    CHECK(GH_HAS(&old, call_context));
    CHECK_FALSE(GH_HAS(&old, sink_new));
    CHECK_FALSE(GH_HAS(&old, session_open));
    CHECK_FALSE(GH_HAS(&old, critical_read));
}

TEST_CASE("call.state_take on a 1.3 host says the host predates ABI 1.4", "[abi]") {
    gh_host_api v4 = *gatehouse::plugins::host_api();
    v4.struct_size = GH_HOST_API_SIZE_V4; // what a 1.3 host hands out
    const gh::Call call(&v4, nullptr, gh::Json::object());
    CHECK_THROWS_WITH(call.state_take("code/x"), Catch::Contains("predates plugin ABI 1.4"));
}

namespace {
// A request that is no gated tool call: what a resource read or a prompt sees.
class NoToolCall final : public gatehouse::plugins::CallEnvironment {
public:
    bool cancelled() const override { return false; }
    void log(int32_t, std::string_view, std::string_view) override {}
    void progress(double, double, std::string_view) override {}
    std::string_view context_json() override { return "{}"; }
};
} // namespace

TEST_CASE("store_credentials is in the 1.4 host table, and plugin.hpp tells an older host apart", "[abi]") {
    const gh_host_api* api = gatehouse::plugins::host_api();
    CHECK(GH_HAS(api, store_credentials));
    gh_host_api v4 = *api;
    v4.struct_size = GH_HOST_API_SIZE_V4; // what a 1.3 host hands out
    CHECK(GH_HAS(&v4, state_erase));
    CHECK_FALSE(GH_HAS(&v4, store_credentials));

    NoToolCall environment;
    gh_call call{&environment, "signin", {}};
    const auto on_old_host = gh::Call(&v4, &call, gh::Json::object()).store_credentials();
    CHECK_FALSE(on_old_host);
    CHECK(on_old_host.code == "CREDENTIALS_UNAVAILABLE");
    CHECK_THAT(on_old_host.message, Catch::Contains("ABI 1.4"));
    // Outside a gated tool call there is no session to sign in for.
    const auto outside = gh::Call(api, &call, gh::Json::object()).store_credentials();
    CHECK_FALSE(outside);
    CHECK(outside.code == "NOT_CONNECTED");
    CHECK(outside.password.empty());
}

TEST_CASE("GH_TOOL_READS_CRITICAL is a known tool flag", "[abi]") {
    CHECK((GH_TOOL_KNOWN_FLAGS & GH_TOOL_READS_CRITICAL) != 0);
    CHECK((GH_TOOL_GATE_EXEMPT & GH_TOOL_READS_CRITICAL) == 0);
}

TEST_CASE("a V2 (ABI 1.1) descriptor reads with no resources, templates or prompts", "[abi]") {
    // Non-zero bytes after struct_size stand for whatever memory follows an
    // older plugin's descriptor: none of it may be read.
    std::vector<unsigned char> v2(sizeof(gh_plugin_desc), 0xA5);
    std::memset(v2.data(), 0, GH_PLUGIN_DESC_SIZE_V2);
    const uint32_t size = GH_PLUGIN_DESC_SIZE_V2, abi = (1u << 16) | 1u;
    std::memcpy(v2.data(), &size, 4);
    std::memcpy(v2.data() + 4, &abi, 4);
    std::string why;
    auto desc = read_abi_struct<gh_plugin_desc>(v2.data(), why);
    REQUIRE(desc);
    CHECK(desc->resource_count == 0);
    CHECK(desc->resource_template_count == 0);
    CHECK(desc->prompt_count == 0);
    CHECK(desc->resources == nullptr);
    CHECK(desc->prompts == nullptr);
    CHECK(GH_PLUGIN_DESC_SIZE_V3 > GH_PLUGIN_DESC_SIZE_V2);
}

TEST_CASE("a V3 (ABI 1.2) descriptor reads with no pages", "[abi]") {
    std::vector<unsigned char> v3(sizeof(gh_plugin_desc), 0xA5);
    std::memset(v3.data(), 0, GH_PLUGIN_DESC_SIZE_V3);
    const uint32_t size = GH_PLUGIN_DESC_SIZE_V3, abi = (1u << 16) | 2u;
    std::memcpy(v3.data(), &size, 4);
    std::memcpy(v3.data() + 4, &abi, 4);
    std::string why;
    auto desc = read_abi_struct<gh_plugin_desc>(v3.data(), why);
    REQUIRE(desc);
    CHECK(desc->page_count == 0);
    CHECK(desc->pages == nullptr);
    CHECK(GH_PLUGIN_DESC_SIZE_V4 > GH_PLUGIN_DESC_SIZE_V3);
}

namespace {
// A session service that refuses the way the host's does: code, sentence, next.
class RefusingSessions final : public gatehouse::plugins::CallEnvironment {
public:
    bool cancelled() const override { return false; }
    void log(int32_t, std::string_view, std::string_view) override {}
    void progress(double, double, std::string_view) override {}
    std::string_view context_json() override { return "{}"; }
    gatehouse::plugins::ServiceAnswer open_session(std::string_view) override {
        return {GH_STATUS_TOOL_ERROR,
                R"({"code":"TOPIC_INVALID","message":"A topic is one word.","next":{"argument":"topic"}})"};
    }
};

// Runs the one tool of `desc` as the host would, on `api`'s behalf.
int32_t run_only_tool(const gh_plugin_desc* desc, gh_sink& out) {
    NoToolCall environment;
    gh_call call{&environment, "refuser", {}};
    const gh_tool_desc* tool = desc->tools[0];
    return tool->call(nullptr, tool->tool_data, &call, gh::view(std::string_view("{}")), &out);
}
} // namespace

TEST_CASE("GH_HOST_KNOWS_REFUSALS is true from ABI 1.5 of the same major only", "[abi]") {
    const gh_host_api* api = gatehouse::plugins::host_api();
    CHECK(GH_ABI_VERSION_MINOR >= 5);
    CHECK(GH_HOST_KNOWS_REFUSALS(api));
    gh_host_api older = *api;
    older.abi_version = (1u << 16) | 4u; // what a 1.4 host hands out
    CHECK_FALSE(GH_HOST_KNOWS_REFUSALS(&older));
    older.abi_version = (2u << 16) | 9u;
    CHECK_FALSE(GH_HOST_KNOWS_REFUSALS(&older));
    CHECK_FALSE(GH_HOST_KNOWS_REFUSALS(static_cast<const gh_host_api*>(nullptr)));
}

TEST_CASE("gh::Refusal crosses as GH_STATUS_REFUSED with {code, message, next}, and as text to a 1.4 host", "[abi]") {
    static gh::Plugin plugin{{.name = "test-refuser", .version = "1.0.0", .family = "refuser"}};
    static const auto& refuse = plugin.tool({
        .name = "refuse",
        .handler = [](gh::Call&) -> gh::Result {
            throw gh::Refusal("QUOTA_USED", "The quota is used up; try again next month.", {{"retry", "next month"}});
        },
    });
    (void)refuse;

    gh_sink out;
    CHECK(run_only_tool(plugin.descriptor(gatehouse::plugins::host_api(), nullptr), out) == GH_STATUS_REFUSED);
    CHECK(gh::Json::parse(out.bytes) == gh::Json{{"code", "QUOTA_USED"},
                                                 {"message", "The quota is used up; try again next month."},
                                                 {"next", {{"retry", "next month"}}}});

    gh_host_api older = *gatehouse::plugins::host_api();
    older.abi_version = (1u << 16) | 4u; // a 1.4 host would take the new status for a fault
    gh_sink text;
    CHECK(run_only_tool(plugin.descriptor(&older, nullptr), text) == GH_STATUS_TOOL_ERROR);
    CHECK(text.bytes == "QUOTA_USED: The quota is used up; try again next month.");
}

TEST_CASE("a host service's refusal reaches the handler as gh::Refusal with the host's code and next", "[abi]") {
    RefusingSessions environment;
    gh_call call{&environment, "session", {}};
    const gh::Call c(gatehouse::plugins::host_api(), &call, gh::Json::object());
    try {
        c.session_open("a b");
        FAIL("session_open did not throw");
    } catch (const gh::Refusal& refusal) {
        CHECK(refusal.code() == "TOPIC_INVALID");
        CHECK(refusal.message() == "A topic is one word.");
        CHECK(refusal.next() == gh::Json{{"argument", "topic"}});
        CHECK(std::string(refusal.what()) == "TOPIC_INVALID: A topic is one word.");
    }
}

TEST_CASE("a 1.5 plugin descriptor (V4) reads with no command-line verbs", "[abi]") {
    std::vector<unsigned char> v4(sizeof(gh_plugin_desc), 0xA5);
    std::fill(v4.begin(), v4.begin() + GH_PLUGIN_DESC_SIZE_V4, 0);
    const uint32_t size = GH_PLUGIN_DESC_SIZE_V4, abi = (1u << 16) | 5u;
    std::memcpy(v4.data(), &size, 4);
    std::memcpy(v4.data() + 4, &abi, 4);
    std::string why;
    auto desc = read_abi_struct<gh_plugin_desc>(v4.data(), why);
    REQUIRE(desc);
    CHECK(desc->command_count == 0);
    CHECK(desc->reserved3 == 0);
    CHECK(desc->commands == nullptr);
    CHECK(GH_PLUGIN_DESC_SIZE_V5 > GH_PLUGIN_DESC_SIZE_V4);
}
