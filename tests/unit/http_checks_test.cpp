#include "transport/http_access.hpp"
#include "transport/http_framing.hpp"
#include "transport/http_media_types.hpp"
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

namespace {

// Request headers by name, whatever its case, from a map of lowercase names.
HeaderLookup lookup_in(const std::map<std::string, std::string>& headers) {
    return [&headers](std::string_view name) -> std::optional<std::string_view> {
        std::string key(name);
        for (auto& c : key)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto it = headers.find(key);
        if (it == headers.end()) return std::nullopt;
        return it->second;
    };
}

} // namespace

TEST_CASE("request headers are checked against the body", "[http]") {
    std::map<std::string, std::string> headers{{"mcp-protocol-version", "2026-07-28"},
                                               {"mcp-method", "tools/call"},
                                               {"mcp-name", "route"},
                                               {"mcp-param-count", "42.0"}};
    const HeaderLookup lookup = lookup_in(headers);
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

TEST_CASE("an integer argument and its Mcp-Param header are compared exactly, as JSON writes numbers", "[http]") {
    std::map<std::string, std::string> headers{
        {"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"mcp-name", "route"}};
    const HeaderLookup lookup = lookup_in(headers);
    const auto matches = [&](const char* body_value, const char* header) {
        headers["mcp-param-count"] = header;
        const Json message = Json::parse(
            std::string(
                R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"route","arguments":{"count":)") +
            body_value + R"(},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
        return !check_request_headers(lookup, message, {{"Count", {"count"}}});
    };
    // Past 2^53 two integers are one double: before, these matched.
    CHECK(matches("9007199254740993", "9007199254740993"));
    CHECK_FALSE(matches("9007199254740993", "9007199254740992"));
    CHECK(matches("18446744073709551615", "18446744073709551615"));
    CHECK_FALSE(matches("18446744073709551615", "18446744073709551614"));
    CHECK(matches("-42", "-42"));
    // What strtod takes and JSON does not write: refused.
    for (const char* other : {"0x2A", "+42", " 42", "42 ", "4.2e1x", "inf", "nan", "42.", ".5", "042", "0042.0"})
        CHECK_FALSE(matches("42", other));
    // A number JSON may write for the same value still matches.
    CHECK(matches("42", "42.0"));
    CHECK(matches("42", "4.2e1"));
    CHECK(matches("0.5", "0.5"));
    CHECK_FALSE(matches("9007199254740993", "9007199254740993.0"));
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

TEST_CASE("Content-Type names application/json itself, with or without parameters", "[http]") {
    CHECK(is_json_media_type("application/json"));
    CHECK(is_json_media_type("Application/JSON; charset=utf-8"));
    CHECK(is_json_media_type(" application/json ;charset=UTF-8"));
    CHECK_FALSE(is_json_media_type(""));
    CHECK_FALSE(is_json_media_type("application/jsonl"));
    CHECK_FALSE(is_json_media_type("application/json-seq"));
    CHECK_FALSE(is_json_media_type("text/application/json"));
    CHECK_FALSE(is_json_media_type("application/json2; x=1"));
}

TEST_CASE("Accept allows JSON, SSE, both or neither, the most specific range deciding", "[http]") {
    const auto both = [](std::optional<std::string_view> accept) {
        const auto a = accepted_answers(accept);
        return std::pair{a.json, a.event_stream};
    };
    CHECK(both(std::nullopt) == std::pair{true, true});
    CHECK(both("application/json, text/event-stream") == std::pair{true, true});
    CHECK(both("text/event-stream") == std::pair{false, true});
    CHECK(both("application/json") == std::pair{true, false});
    CHECK(both("*/*") == std::pair{true, true});
    CHECK(both("text/*") == std::pair{false, true});
    CHECK(both("application/*;q=0.3") == std::pair{true, false});
    CHECK(both("text/html") == std::pair{false, false});
    CHECK(both("") == std::pair{false, false});
    CHECK(both("application/json;q=0, text/event-stream") == std::pair{false, true});
    CHECK(both("application/json; q=0.000") == std::pair{false, false});
    CHECK(both("application/json;q=0.001") == std::pair{true, false});
    CHECK(both("*/*, text/event-stream;q=0") == std::pair{true, false});
    CHECK(both("text/event-stream;q=0, */*") == std::pair{true, false});
    CHECK(both("application/jsonx, text/event-streams") == std::pair{false, false});
}

namespace {
boost::beast::http::request_header<> header_of(std::initializer_list<std::pair<const char*, const char*>> fields,
                                               unsigned version = 11) {
    boost::beast::http::request_header<> header;
    header.version(version);
    for (const auto& [name, value] : fields)
        header.insert(name, value);
    return header;
}
} // namespace

TEST_CASE("Transfer-Encoding is chunked alone, on HTTP/1.1", "[http]") {
    CHECK_FALSE(refuse_transfer_encoding(header_of({})));
    CHECK_FALSE(refuse_transfer_encoding(header_of({{"Transfer-Encoding", "chunked"}})));
    CHECK_FALSE(refuse_transfer_encoding(header_of({{"Transfer-Encoding", " Chunked "}})));
    const auto status = [](const boost::beast::http::request_header<>& h) {
        const auto refusal = refuse_transfer_encoding(h);
        return refusal ? refusal->status : 0;
    };
    CHECK(status(header_of({{"Transfer-Encoding", "chunked, identity"}})) == 400);
    CHECK(status(header_of({{"Transfer-Encoding", "identity"}})) == 400);
    CHECK(status(header_of({{"Transfer-Encoding", ""}})) == 400);
    CHECK(status(header_of({{"Transfer-Encoding", "chunked, chunked"}})) == 400);
    CHECK(status(header_of({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "identity"}})) == 400);
    CHECK(status(header_of({{"Transfer-Encoding", "gzip, chunked"}})) == 501);
    CHECK(status(header_of({{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}})) == 501);
    CHECK(status(header_of({{"Transfer-Encoding", "chunked"}}, 10)) == 400);
    const auto refusal = refuse_transfer_encoding(header_of({{"Transfer-Encoding", "chunked, identity"}}));
    CHECK_THAT(refusal->message, Catch::Contains("'chunked, identity'"));
}

TEST_CASE("a header read once, sent twice, is refused by its name", "[http]") {
    const auto refused = [](std::initializer_list<std::pair<const char*, const char*>> fields) -> std::string {
        const auto refusal = refuse_repeated_header(header_of(fields));
        return refusal ? refusal->message : "";
    };
    CHECK(refused({{"Host", "a"},
                   {"Origin", "b"},
                   {"Accept", "x"},
                   {"Accept", "y"},
                   {"Mcp-Param-A", "1"},
                   {"Mcp-Param-B", "2"},
                   {"X-Other", "1"},
                   {"X-Other", "2"}})
              .empty());
    for (const char* name : {"Host", "Origin", "Authorization", "Content-Type", "MCP-Protocol-Version", "Mcp-Method",
                             "Mcp-Name", "Mcp-Session-Id"}) {
        INFO(name);
        CHECK(refused({{name, "a"}, {"X-Between", "1"}, {name, "b"}}) ==
              std::string("The request carries the ") + name + " header more than once; send it once.");
    }
    CHECK(refused({{"mcp-method", "a"}, {"MCP-METHOD", "b"}}) ==
          "The request carries the Mcp-Method header more than once; send it once.");
    CHECK(refused({{"Mcp-Param-Zone", "a"}, {"mcp-param-zone", "b"}}) ==
          "The request carries the Mcp-Param-Zone header more than once; send it once.");
}
