#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::license {

// License times are written `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC, whole
// seconds) and nothing else: one spelling per instant, so the signed bytes
// of a license never depend on a time zone or a locale. Years run 1970 to
// 2200 (the clock counts nanoseconds in 64 bits and ends in 2262).
std::optional<std::chrono::system_clock::time_point> parse_utc_timestamp(std::string_view text);

std::string format_utc_timestamp(std::chrono::system_clock::time_point when);

} // namespace gatehouse::license
