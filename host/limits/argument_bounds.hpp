#pragma once

#include "gate/refusal.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace gatehouse::limits {

// The host's bounds on a tool call's arguments (limits: in the YAML).
struct ArgumentBounds {
    std::size_t max_string_bytes = 64 * 1024;
    std::size_t max_array_items = 10000;
};

// The first value in `arguments` beyond the host's bounds, as a refusal
// naming its JSON pointer: a string value or object key longer than
// `max_string_bytes` (limits.max_string_bytes), or an array of more than
// `max_array_items` items, is ARGUMENT_TOO_LARGE; an integer above 2^63-1 is
// INTEGER_OUT_OF_RANGE (the host and its plugins read integers as 64-bit
// signed: such a value would wrap to a negative one; JSON Schema's
// "integer" lets it through); a string or key holding U+0000 is
// NUL_IN_STRING (the validator measures maxLength up to the first NUL, and
// a plugin may cut the string there). Runs before JSON Schema validation so
// a long string never meets a `pattern` (libstdc++'s std::regex recurses
// once per character and would overflow the stack) and a long array never
// meets `uniqueItems` (which compares every pair). Iterative, so deep
// arguments cannot overflow it either.
std::optional<gate::Refusal> argument_beyond_bounds(const nlohmann::json& arguments, const ArgumentBounds& bounds,
                                                    const std::string& tool);

// The stack a worker needs to validate any string up to max_string_bytes
// against a schema `pattern`: measured, libstdc++ std::regex takes about 0.8
// KiB per character for a pattern like ^(a|b)*$ (1.1 KiB under
// AddressSanitizer), so 2 KiB per byte plus 8 MiB for everything else. The
// pages are reserved, and only touched when such a string is matched.
std::size_t worker_stack_bytes(std::size_t max_string_bytes);

} // namespace gatehouse::limits
