#pragma once

#include <optional>
#include <string_view>

namespace gatehouse::protocol {

// MCP (syslog) levels; the numbers equal the ABI's GH_LOG_* values.
std::optional<int> parse_log_level(std::string_view name);
const char* log_level_name(int level);

} // namespace gatehouse::protocol
