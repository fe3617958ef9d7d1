#pragma once

#include "gate/refusal.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace gatehouse::limits {

// The first string value or object key in `arguments` longer than
// `max_string_bytes` (limits.max_string_bytes), as an ARGUMENT_TOO_LARGE
// refusal naming its JSON pointer, its size and the limit. Runs before JSON
// Schema validation so such a string never meets a `pattern`: libstdc++'s
// std::regex recurses once per character and would overflow the stack.
// Iterative, so deep arguments cannot overflow it either.
std::optional<gate::Refusal> oversized_argument(const nlohmann::json& arguments, std::size_t max_string_bytes,
                                                const std::string& tool);

// The stack a worker needs to validate any string up to max_string_bytes
// against a schema `pattern`: measured, libstdc++ std::regex takes about 0.8
// KiB per character for a pattern like ^(a|b)*$ (1.1 KiB under
// AddressSanitizer), so 2 KiB per byte plus 8 MiB for everything else. The
// pages are reserved, and only touched when such a string is matched.
std::size_t worker_stack_bytes(std::size_t max_string_bytes);

} // namespace gatehouse::limits
