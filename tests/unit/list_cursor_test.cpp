#include "protocol/list_cursor.hpp"

#include <catch2/catch.hpp>

using gatehouse::protocol::decode_cursor;
using gatehouse::protocol::encode_cursor;

namespace {

// base64url without padding, to forge cursors with a chosen inside.
std::string forge(const std::string& inside) {
    static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    unsigned value = 0;
    int bits = 0;
    for (unsigned char c : inside) {
        value = (value << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += alphabet[(value >> bits) & 0x3f];
        }
    }
    if (bits > 0) out += alphabet[(value << (6 - bits)) & 0x3f];
    return out;
}

} // namespace

TEST_CASE("a cursor decodes to the offset it was made with", "[cursor]") {
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{123456789}}) {
        const auto cursor = encode_cursor("fp-1234", offset);
        INFO(cursor);
        auto decoded = decode_cursor(cursor, "fp-1234");
        REQUIRE(decoded);
        CHECK(*decoded == offset);
    }
}

TEST_CASE("a cursor is opaque URL-safe text", "[cursor]") {
    const auto cursor = encode_cursor("987654", 42);
    CHECK(cursor.find("42") == std::string::npos);
    for (char c : cursor)
        CHECK((std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'));
}

TEST_CASE("a cursor from another tool set is refused", "[cursor]") {
    const auto cursor = encode_cursor("fp-1234", 10);
    CHECK_FALSE(decode_cursor(cursor, "fp-1235"));
    CHECK_FALSE(decode_cursor(cursor, "fp-123"));
    CHECK_FALSE(decode_cursor(cursor, ""));
}

TEST_CASE("a tampered or made-up cursor is refused", "[cursor]") {
    auto cursor = encode_cursor("fp", 10);
    CHECK_FALSE(decode_cursor("", "fp"));
    CHECK_FALSE(decode_cursor("not a cursor!", "fp"));       // outside the alphabet
    CHECK_FALSE(decode_cursor(cursor + "=", "fp"));          // padding is not part of it
    CHECK_FALSE(decode_cursor(cursor.substr(0, 3), "fp"));   // cut short
    CHECK_FALSE(decode_cursor(std::string(200, 'A'), "fp")); // too long to be ours
    std::string flipped = cursor;
    flipped[0] = flipped[0] == 'A' ? 'B' : 'A'; // breaks the version tag
    CHECK_FALSE(decode_cursor(flipped, "fp"));
    // The forger works: it makes what encode_cursor makes.
    CHECK(forge("c1:fp:10") == cursor);
    CHECK(decode_cursor(forge("c1:fp:7"), "fp") == std::optional<std::size_t>(7));
    // Right fingerprint, but no valid offset after it.
    CHECK_FALSE(decode_cursor(forge("c1:fp:"), "fp"));
    CHECK_FALSE(decode_cursor(forge("c1:fp:abc"), "fp"));
    CHECK_FALSE(decode_cursor(forge("c1:fp:-1"), "fp"));
    CHECK_FALSE(decode_cursor(forge("c1:fp:12x"), "fp"));
    CHECK_FALSE(decode_cursor(forge("c1:fp:99999999999999999999999"), "fp"));
    // Another cursor version.
    CHECK_FALSE(decode_cursor(forge("c2:fp:10"), "fp"));
}

TEST_CASE("the offset is decoded as it is, the list decides whether it is in range", "[cursor]") {
    // decode_cursor knows nothing of the list's length: McpServer refuses an
    // offset past the end (see mcp_server_test), the cursor only round-trips it.
    auto decoded = decode_cursor(encode_cursor("fp", 1000000), "fp");
    REQUIRE(decoded);
    CHECK(*decoded == 1000000);
}
