#include "plugins/abi_struct.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstring>

using gatehouse::plugins::read_abi_struct;

namespace {

// A struct as this host knows it (v2) and as an older plugin built it (v1).
struct Versioned {
    std::uint32_t struct_size;
    std::uint32_t first;
    std::uint64_t second; // v1 ends here
    std::uint64_t third;  // added in v2: zero means the old behaviour
};
constexpr std::size_t kV1 = offsetof(Versioned, third);
constexpr std::size_t kMinimum = offsetof(Versioned, second) + sizeof(std::uint64_t);

// A newer plugin's struct: this host's fields plus one it does not know.
struct Newer {
    Versioned known;
    std::uint64_t unknown;
};

} // namespace

template <> struct gatehouse::plugins::PublishedSizes<Versioned> {
    static constexpr std::array sizes{kV1, sizeof(Versioned)};
};

TEST_CASE("read_abi_struct copies a struct of exactly the known size", "[abi]") {
    Versioned in{sizeof(Versioned), 7, 8, 9};
    std::string why;
    auto out = read_abi_struct<Versioned>(&in, why);
    REQUIRE(out);
    CHECK(out->first == 7);
    CHECK(out->second == 8);
    CHECK(out->third == 9);
    CHECK(why.empty());
}

TEST_CASE("read_abi_struct zero-fills the fields an older (smaller) struct lacks", "[abi]") {
    // The bytes after struct_size are garbage: they must not be read.
    unsigned char buffer[sizeof(Versioned)];
    std::memset(buffer, 0xAB, sizeof buffer);
    Versioned v1{static_cast<std::uint32_t>(kV1), 1, 2, 0};
    std::memcpy(buffer, &v1, kV1);
    std::string why;
    auto out = read_abi_struct<Versioned>(buffer, why);
    REQUIRE(out);
    CHECK(out->struct_size == kV1);
    CHECK(out->first == 1);
    CHECK(out->second == 2);
    CHECK(out->third == 0);
}

TEST_CASE("read_abi_struct accepts a larger struct whose unknown tail is zero", "[abi]") {
    Newer in{};
    in.known = {sizeof(Newer), 3, 4, 5};
    in.unknown = 0;
    std::string why;
    auto out = read_abi_struct<Versioned>(&in, why);
    REQUIRE(out);
    CHECK(out->first == 3);
    CHECK(out->third == 5);
}

TEST_CASE("read_abi_struct refuses a larger struct that sets fields this host does not know", "[abi]") {
    Newer in{};
    in.known = {sizeof(Newer), 3, 4, 5};
    in.unknown = std::uint64_t{1} << 40; // a single non-zero byte deep in the tail
    std::string why;
    CHECK_FALSE(read_abi_struct<Versioned>(&in, why));
    CHECK_THAT(why, Catch::Contains("struct_size " + std::to_string(sizeof(Newer))));
    CHECK_THAT(why, Catch::Contains("does not know"));
}

TEST_CASE("read_abi_struct refuses a struct below the smallest published size", "[abi]") {
    Versioned in{static_cast<std::uint32_t>(kMinimum - 1), 1, 2, 3};
    std::string why;
    CHECK_FALSE(read_abi_struct<Versioned>(&in, why));
    CHECK_THAT(why, Catch::Contains("smaller than the smallest published size " + std::to_string(kMinimum)));

    std::string null_why;
    CHECK_FALSE(read_abi_struct<Versioned>(nullptr, null_why));
    CHECK_THAT(null_why, Catch::Contains("null"));
}

TEST_CASE("read_abi_struct refuses a size between published ones: it would end inside a field", "[abi]") {
    Versioned in{static_cast<std::uint32_t>(kV1 + 4), 1, 2, 3};
    std::string why;
    CHECK_FALSE(read_abi_struct<Versioned>(&in, why));
    CHECK_THAT(why, Catch::Contains("struct_size 20 is none of the published sizes (16, 24)"));
}
