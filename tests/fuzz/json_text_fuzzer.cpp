// Any bytes through protocol::parse_bounded, the reader of every message and
// answer: it must refuse what nlohmann's parser refuses (and a NUL byte
// anywhere), build the same tree from the rest, and honour its depth bound;
// protocol::append_json writes that tree as nlohmann's dump does.
#include "protocol/json_reader.hpp"
#include "protocol/json_writer.hpp"
#include "same_tree.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

using gatehouse::protocol::BoundedParse;
using gatehouse::protocol::Json;
using gatehouse::testing::same_tree;

namespace {

std::size_t depth_of(const Json& j) {
    if (!j.is_structured()) return 0;
    std::size_t deepest = 0;
    for (const auto& item : j)
        deepest = std::max(deepest, depth_of(item));
    return deepest + 1;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const Json expected = Json::parse(text, nullptr, false);
    const BoundedParse read = gatehouse::protocol::parse_bounded(text);
    // A NUL byte is JSON nowhere; nlohmann's parser takes it for the end of the text.
    if (expected.is_discarded() || text.find('\0') != std::string_view::npos) {
        if (read.outcome != BoundedParse::Outcome::not_json || !read.value.is_null() || read.error.empty())
            std::abort();
        return 0;
    }
    if (!read.parsed() || !same_tree(read.value, expected)) std::abort();
    std::string line;
    gatehouse::protocol::append_json(line, read.value);
    if (line != expected.dump(-1, ' ', false, Json::error_handler_t::replace)) std::abort();
    // The bound: one level less than the text has is refused, its own depth is not.
    const std::size_t depth = depth_of(expected);
    if (!gatehouse::protocol::parse_bounded(text, depth).parsed()) std::abort();
    if (depth > 0 && gatehouse::protocol::parse_bounded(text, depth - 1).outcome != BoundedParse::Outcome::too_deep)
        std::abort();
    return 0;
}
