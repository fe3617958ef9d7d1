// JSON Schema compile and validate: the input is a schema document and an
// instance, separated by the first NUL byte. Both must parse as JSON and nest
// no deeper than the host's default message limit (64), as tool arguments do
// after the transport's depth check. A schema the wrapper refuses
// (std::invalid_argument) is fine; anything else escaping is a finding.
#include "protocol/json_rpc.hpp"
#include "schema/json_schema.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string_view>

using gatehouse::schema::JsonSchema;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const auto cut = std::min(all.find('\0'), all.size());
    const std::string_view schema_text = all.substr(0, cut);
    const std::string_view instance_text = cut < all.size() ? all.substr(cut + 1) : std::string_view("{}");
    constexpr std::size_t kDepth = 64;
    auto schema_doc = gatehouse::protocol::parse_bounded(schema_text, kDepth);
    auto instance = gatehouse::protocol::parse_bounded(instance_text, kDepth);
    if (!schema_doc.parsed() || !instance.parsed()) return 0;
    std::shared_ptr<const JsonSchema> schema;
    try {
        schema = JsonSchema::compile(schema_doc.value);
    } catch (const std::invalid_argument&) {
        return 0;
    }
    if (auto violation = schema->validate(instance.value)) (void)violation->sentence();
    return 0;
}
