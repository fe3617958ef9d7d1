#include "transport/http_access.hpp"
#include "transport/mcp_http_headers.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace gatehouse;
using namespace gatehouse::transport;
using protocol::Json;

TEST_CASE("Mcp-Name and Mcp-Param values decode from plain ASCII or the Base64 sentinel", "[http]") {
    CHECK(decode_mcp_header_value("us-west1") == "us-west1");
    CHECK(decode_mcp_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界");
    CHECK(decode_mcp_header_value("=?base64?IHBhZGRlZCA=?=") == " padded ");
    CHECK(decode_mcp_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=") == "=?base64?literal?=");
    CHECK(decode_mcp_header_value("=?base64?"
                                  "?=") == ""); // split: "??=" would be a trigraph
    CHECK_FALSE(decode_mcp_header_value("=?base64?not base64?="));
    CHECK_FALSE(decode_mcp_header_value("=?base64?QQ=A?="));
    CHECK_FALSE(decode_mcp_header_value("line\nbreak"));
    CHECK_FALSE(decode_mcp_header_value("caf\xc3\xa9"));
}

TEST_CASE("x-mcp-header annotations are found through properties only", "[http]") {
    const Json schema = Json::parse(R"({"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "target":{"type":"object","properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}},
        "plain":{"type":"string"}}})");
    const auto found = find_param_headers(schema);
    REQUIRE(found.size() == 2);
    std::map<std::string, std::vector<std::string>> by_name;
    for (const auto& h : found)
        by_name[h.name] = h.path;
    CHECK(by_name["Region"] == std::vector<std::string>{"region"});
    CHECK(by_name["Zone"] == std::vector<std::string>{"target", "zone"});
}

TEST_CASE("misplaced, duplicate or malformed x-mcp-header annotations make the tool invalid", "[http]") {
    const auto refused = [](const char* text) {
        try {
            find_param_headers(Json::parse(text));
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(
        refused(R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}})")
            .find("not reachable through properties alone") != std::string::npos);
    CHECK(refused(R"({"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]})")
              .find("/anyOf/0/properties/a") != std::string::npos);
    CHECK(refused(R"({"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}})")
              .find("not string, integer or boolean") != std::string::npos);
    CHECK(refused(R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}})")
              .find("HTTP token") != std::string::npos);
    CHECK(refused(R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},
                      "b":{"type":"string","x-mcp-header":"x"}}})")
              .find("used twice") != std::string::npos);
}

TEST_CASE("request headers are checked against the body", "[http]") {
    std::map<std::string, std::string> headers{{"mcp-protocol-version", "2026-07-28"},
                                               {"mcp-method", "tools/call"},
                                               {"mcp-name", "route"},
                                               {"mcp-param-count", "42.0"}};
    const HeaderLookup lookup = [&](std::string_view name) -> std::optional<std::string_view> {
        std::string key(name);
        for (auto& c : key)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto it = headers.find(key);
        if (it == headers.end()) return std::nullopt;
        return it->second;
    };
    const Json message = Json::parse(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"route",
        "arguments":{"count":42},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
    const std::vector<ParamHeader> params{{"Count", {"count"}}};
    CHECK_FALSE(check_request_headers(lookup, message, params));
    headers["mcp-param-count"] = "43";
    CHECK(check_request_headers(lookup, message, params)->find("does not match body value 42") != std::string::npos);
    headers["mcp-param-count"] = "42";
    headers["mcp-name"] = "=?base64?cm91dGU=?=";
    CHECK_FALSE(check_request_headers(lookup, message, params));
    headers.erase("mcp-method");
    CHECK(*check_request_headers(lookup, message, params) == "the Mcp-Method header is missing");
}

TEST_CASE("Host and Origin checks against DNS rebinding and foreign pages", "[http]") {
    config::HttpSettings loopback;
    const HttpAccess local(loopback);
    CHECK(local.host_allowed("127.0.0.1:8765"));
    CHECK(local.host_allowed("localhost"));
    CHECK(local.host_allowed("[::1]:8765"));
    CHECK(local.host_allowed("LOCALHOST:1"));
    CHECK_FALSE(local.host_allowed("attacker.example"));
    CHECK_FALSE(local.host_allowed(""));
    CHECK(local.origin_allowed("http://localhost:3000"));
    CHECK(local.origin_allowed("https://127.0.0.1"));
    CHECK_FALSE(local.origin_allowed("http://localhost.attacker.example"));
    CHECK_FALSE(local.origin_allowed("null"));
    CHECK_FALSE(local.origin_allowed("https://app.example.com"));

    config::HttpSettings open;
    open.listen_host = "0.0.0.0";
    open.allowed_hosts = {"mcp.example.com"};
    open.allowed_origins = {"https://app.example.com/"};
    const HttpAccess remote(open);
    CHECK(remote.host_allowed("mcp.example.com:443"));
    CHECK_FALSE(remote.host_allowed("localhost"));
    CHECK(remote.origin_allowed("https://app.example.com"));
    CHECK_FALSE(remote.origin_allowed("http://localhost:3000"));
}
