#include "limits/argument_bounds.hpp"

#include "isolation/address_sanitizer.hpp"

#include "schema/json_schema.hpp"

#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <limits>
#include <vector>

namespace gatehouse::limits {

namespace {

gate::Refusal too_large(const std::string& tool, const std::string& pointer, bool is_key, std::size_t bytes,
                        std::size_t limit) {
    const std::string where = pointer.empty() ? "/" : pointer;
    gate::Refusal r;
    r.code = gate::refusal_code::argument_too_large;
    r.message = std::string(is_key ? "An object key" : "The string") + " at " + where + " in the arguments of tool '" +
                tool + "' is " + std::to_string(bytes) + " bytes long; this server accepts at most " +
                std::to_string(limit) + " bytes (limits.max_string_bytes). Send a shorter value; nothing ran.";
    r.next = {{"pointer", where}, {"bytes", bytes}, {"maxBytes", limit}, {"limit", "max_string_bytes"}};
    return r;
}

gate::Refusal too_many_items(const std::string& tool, const std::string& pointer, std::size_t items,
                             std::size_t limit) {
    const std::string where = pointer.empty() ? "/" : pointer;
    gate::Refusal r;
    r.code = gate::refusal_code::argument_too_large;
    r.message = "The array at " + where + " in the arguments of tool '" + tool + "' has " + std::to_string(items) +
                " items; this server accepts at most " + std::to_string(limit) +
                " (limits.max_array_items). Send fewer; nothing ran.";
    r.next = {{"pointer", where}, {"items", items}, {"maxItems", limit}, {"limit", "max_array_items"}};
    return r;
}

gate::Refusal nul_inside(const std::string& tool, const std::string& pointer, bool is_key) {
    const std::string where = pointer.empty() ? "/" : pointer;
    gate::Refusal r;
    r.code = gate::refusal_code::nul_in_string;
    r.message = std::string(is_key ? "An object key" : "The string") + " at " + where + " in the arguments of tool '" +
                tool +
                "' holds the character U+0000, which this server does not accept in a tool's arguments. "
                "Send it without; nothing ran.";
    r.next = {{"pointer", where}};
    return r;
}

gate::Refusal out_of_range(const std::string& tool, const std::string& pointer, const nlohmann::json& value) {
    const std::string where = pointer.empty() ? "/" : pointer;
    gate::Refusal r;
    r.code = gate::refusal_code::integer_out_of_range;
    r.message = "The integer " + value.dump() + " at " + where + " in the arguments of tool '" + tool +
                "' is out of range: this server takes integers from -9223372036854775808 to 9223372036854775807. "
                "Send a value in that range; nothing ran.";
    r.next = {{"pointer", where},
              {"minimum", std::numeric_limits<std::int64_t>::min()},
              {"maximum", std::numeric_limits<std::int64_t>::max()}};
    return r;
}

} // namespace

std::optional<gate::Refusal> argument_beyond_bounds(const nlohmann::json& arguments, const ArgumentBounds& bounds,
                                                    const std::string& tool) {
    const std::size_t max_string_bytes = bounds.max_string_bytes;
    // Every node met, with its parent and its place there; the pointer is
    // spelled out only for a refusal, so the walk costs one entry a node
    // however deep the arguments nest.
    struct Step {
        const nlohmann::json* node;
        std::size_t parent;   // kRoot for the arguments themselves
        std::string_view key; // its key in an object parent
        std::size_t index;    // its index in an array parent
    };
    constexpr std::size_t kRoot = static_cast<std::size_t>(-1);
    // Room for the usual arguments (a few members) on this thread's stack:
    // a call's walk allocates nothing unless its arguments are many.
    boost::container::small_vector<Step, 16> steps{{&arguments, kRoot, {}, 0}};
    auto pointer_of = [&](std::size_t at) {
        std::vector<std::string> tokens;
        for (; steps[at].parent != kRoot; at = steps[at].parent)
            tokens.push_back(steps[steps[at].parent].node->is_object()
                                 ? schema::json_pointer_token(std::string(steps[at].key))
                                 : std::to_string(steps[at].index));
        std::string pointer;
        for (auto token = tokens.rbegin(); token != tokens.rend(); ++token)
            pointer += "/" + *token;
        return pointer;
    };
    boost::container::small_vector<std::size_t, 16> stack{0};
    while (!stack.empty()) {
        const std::size_t at = stack.back();
        stack.pop_back();
        const auto& node = *steps[at].node;
        if (node.is_string()) {
            const auto& text = node.get_ref<const std::string&>();
            if (text.size() > max_string_bytes)
                return too_large(tool, pointer_of(at), false, text.size(), max_string_bytes);
            if (text.find('\0') != std::string::npos) return nul_inside(tool, pointer_of(at), false);
        } else if (node.is_number_unsigned()) {
            if (node.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                return out_of_range(tool, pointer_of(at), node);
        } else if (node.is_object()) {
            for (auto it = node.begin(); it != node.end(); ++it) {
                // A key is cut short in the pointer: naming it in full would
                // echo the very text that was too long.
                if (it.key().size() > max_string_bytes)
                    return too_large(tool,
                                     pointer_of(at) + "/" + schema::json_pointer_token(it.key().substr(0, 32)) + "…",
                                     true, it.key().size(), max_string_bytes);
                if (it.key().find('\0') != std::string::npos) return nul_inside(tool, pointer_of(at), true);
                stack.push_back(steps.size());
                steps.push_back({&it.value(), at, it.key(), 0});
            }
        } else if (node.is_array()) {
            if (node.size() > bounds.max_array_items)
                return too_many_items(tool, pointer_of(at), node.size(), bounds.max_array_items);
            for (std::size_t i = 0; i < node.size(); ++i) {
                stack.push_back(steps.size());
                steps.push_back({&node[i], at, {}, i});
            }
        }
    }
    return std::nullopt;
}

std::size_t worker_stack_bytes(std::size_t max_string_bytes) {
    // std::regex recurses per character of the string it matches. Under
    // AddressSanitizer each frame carries redzones around its locals: with
    // clang's, 2 KiB a character overflowed (tests/integration/limits).
#ifdef GATEHOUSE_UNDER_ASAN
    constexpr std::size_t kPerByte = 8192;
#else
    constexpr std::size_t kPerByte = 2048;
#endif
    return std::size_t{8} * 1024 * 1024 + max_string_bytes * kPerByte;
}

} // namespace gatehouse::limits
