// The loader's checks of the ABI 1.2 descriptors (resources, resource
// templates, prompts), each driven without a loaded library.
#include "plugins/plugin_loader.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using namespace gatehouse::plugins;

namespace {

gh_str str(const char* text) {
    return gh_str{text, std::strlen(text)};
}

int32_t no_read(void*, void*, gh_call*, gh_str, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}
int32_t no_get(void*, void*, gh_call*, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}

gh_resource_desc good_resource() {
    gh_resource_desc d{};
    d.struct_size = GH_RESOURCE_DESC_SIZE_V1;
    d.uri = str("test://static-text");
    d.name = str("static-text");
    d.mime_type = str("text/plain");
    d.read = &no_read;
    return d;
}

gh_resource_template_desc good_template() {
    gh_resource_template_desc d{};
    d.struct_size = GH_RESOURCE_TEMPLATE_DESC_SIZE_V1;
    d.uri_template = str("test://template/{id}/data");
    d.name = str("template");
    d.read = &no_read;
    return d;
}

gh_prompt_desc good_prompt() {
    gh_prompt_desc d{};
    d.struct_size = GH_PROMPT_DESC_SIZE_V1;
    d.name = str("greet");
    d.arguments = str(R"([{"name":"who","required":true},{"name":"tone","description":"how"}])");
    d.get = &no_get;
    return d;
}

template <class Fn> std::string refusal(Fn&& fn) {
    try {
        fn();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "(accepted)";
}

} // namespace

TEST_CASE("a valid resource is read into its listing", "[loader][resources]") {
    auto d = good_resource();
    d.flags = GH_RESOURCE_HAS_SIZE;
    d.size = 42;
    d.annotations = str(R"({"audience":["user"],"priority":0.5})");
    const auto r = read_resource_descriptor(&d, 0);
    CHECK(r->uri == "test://static-text");
    CHECK(r->listing == nlohmann::json{{"uri", "test://static-text"},
                                       {"name", "static-text"},
                                       {"mimeType", "text/plain"},
                                       {"size", 42},
                                       {"annotations", {{"audience", {"user"}}, {"priority", 0.5}}}});
    d.flags = 0; // without the flag the size is unknown, not 42
    CHECK_FALSE(read_resource_descriptor(&d, 0)->listing.contains("size"));
}

TEST_CASE("each resource defect is refused with what and where", "[loader][resources]") {
    struct Case {
        const char* words;
        void (*spoil)(gh_resource_desc&);
    };
    const Case cases[] = {
        {"resource #3 has a URI that is empty", [](gh_resource_desc& d) { d.uri = {}; }},
        {"has no scheme", [](gh_resource_desc& d) { d.uri = str("static-text"); }},
        {"space or control character at character 12", [](gh_resource_desc& d) { d.uri = str("test://stat ic"); }},
        {"resource 'test://static-text' has no name", [](gh_resource_desc& d) { d.name = {}; }},
        {"invalid MIME type 'text'", [](gh_resource_desc& d) { d.mime_type = str("text"); }},
        {"has no read function", [](gh_resource_desc& d) { d.read = nullptr; }},
        {"sets unknown flag bits 0x4", [](gh_resource_desc& d) { d.flags = 0x4; }},
        {"annotations.priority", [](gh_resource_desc& d) { d.annotations = str(R"({"priority":2})"); }},
        {"annotations.audience", [](gh_resource_desc& d) { d.annotations = str(R"({"audience":["robot"]})"); }},
        {"malformed descriptor JSON in the annotations", [](gh_resource_desc& d) { d.annotations = str("{"); }},
        {"smaller than the smallest published size", [](gh_resource_desc& d) { d.struct_size = 8; }},
    };
    for (const auto& c : cases) {
        INFO(c.words);
        auto d = good_resource();
        c.spoil(d);
        CHECK_THAT(refusal([&] { read_resource_descriptor(&d, 3); }), Catch::Contains(c.words));
    }
}

TEST_CASE("a resource template is compiled at load, and refused when it cannot be matched", "[loader][resources]") {
    auto d = good_template();
    const auto t = read_resource_template_descriptor(&d, 0);
    CHECK(t->listing == nlohmann::json{{"uriTemplate", "test://template/{id}/data"}, {"name", "template"}});
    CHECK(t->uri_template.match("test://template/7/data"));
    CHECK(t->complete == nullptr);

    d.uri_template = str("test://{?q}");
    CHECK_THAT(refusal([&] { read_resource_template_descriptor(&d, 1); }),
               Catch::Contains("resource template #1 'test://{?q}' is not usable") && Catch::Contains("operator '?'"));
    d.uri_template = str("{path}");
    CHECK_THAT(refusal([&] { read_resource_template_descriptor(&d, 1); }),
               Catch::Contains("does not start like an absolute URI"));
    d = good_template();
    d.read = nullptr;
    CHECK_THAT(refusal([&] { read_resource_template_descriptor(&d, 0); }), Catch::Contains("has no read function"));
    d = good_template();
    d.flags = 1;
    CHECK_THAT(refusal([&] { read_resource_template_descriptor(&d, 0); }), Catch::Contains("unknown flag bits 0x1"));
}

TEST_CASE("a prompt's name takes the prefix and its arguments are checked", "[loader][prompts]") {
    auto d = good_prompt();
    const auto p = read_prompt_descriptor(&d, 0, "x_");
    CHECK(p->name == "x_greet");
    CHECK(p->plugin_name == "greet");
    REQUIRE(p->arguments.size() == 2);
    CHECK(p->argument("who")->required);
    CHECK_FALSE(p->argument("tone")->required);
    CHECK(p->argument("nobody") == nullptr);
    CHECK(p->listing["arguments"][1] == nlohmann::json{{"name", "tone"}, {"description", "how"}});

    struct Case {
        const char* arguments;
        const char* words;
    };
    const Case cases[] = {
        {R"({"name":"who"})", "arguments of prompt 'greet' must be a JSON array"},
        {R"([7])", "argument #0 of prompt 'greet' must be a JSON object"},
        {R"([{"title":"x"}])", "argument #0 of prompt 'greet' needs a \"name\""},
        {R"([{"name":""}])", "needs a \"name\" of 1-64 characters"},
        {R"([{"name":"a"},{"name":"a"}])", "declares the argument 'a' twice"},
        {R"([{"name":"a","requried":true}])", "unknown key \"requried\""},
        {R"([{"name":"a","required":"yes"}])", "non-boolean \"required\""},
        {R"([{"name":3}])", "non-string \"name\""},
        {R"([)", "malformed descriptor JSON in the arguments of prompt 'greet'"},
    };
    for (const auto& c : cases) {
        INFO(c.arguments);
        auto bad = good_prompt();
        bad.arguments = str(c.arguments);
        CHECK_THAT(refusal([&] { read_prompt_descriptor(&bad, 0, ""); }), Catch::Contains(c.words));
    }
    auto bad = good_prompt();
    bad.name = str("no spaces");
    CHECK_THAT(refusal([&] { read_prompt_descriptor(&bad, 2, ""); }),
               Catch::Contains("prompt #2 has an invalid name 'no spaces'"));
    bad = good_prompt();
    bad.get = nullptr;
    CHECK_THAT(refusal([&] { read_prompt_descriptor(&bad, 0, ""); }), Catch::Contains("has no get function"));
    bad = good_prompt();
    CHECK_THAT(refusal([&] { read_prompt_descriptor(&bad, 0, std::string(60, 'p')); }),
               Catch::Contains("longer than 64 characters with its prefix"));
}

TEST_CASE("a tool's rules are read up to 64 KiB", "[loader]") {
    const std::string long_rules(64 * 1024 + 1, 'r');
    gh_tool_desc d{};
    d.struct_size = GH_TOOL_DESC_SIZE_V1;
    d.name = str("ruled");
    d.input_schema = str(R"({"type":"object"})");
    d.risk = GH_RISK_WRITE;
    d.call = [](void*, void*, gh_call*, gh_str, gh_sink*) -> int32_t { return GH_STATUS_OK; };
    d.rules = gh_str{long_rules.data(), long_rules.size()};
    CHECK_THAT(refusal([&] { read_tool_descriptor(&d, 0, "", false); }),
               Catch::Contains("the rules of tool 'ruled' are 65537 bytes; at most 65536"));
    d.rules = gh_str{long_rules.data(), long_rules.size() - 1};
    CHECK(refusal([&] { read_tool_descriptor(&d, 0, "", false); }) == "(accepted)");
}
