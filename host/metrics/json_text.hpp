#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace gatehouse::metrics {

// Appends `text` as a JSON string, quotes included: ", \ and control bytes
// escaped, UTF-8 as it is, a byte that is not UTF-8 as U+FFFD. For lines
// written on a call's path (audit, JSON logs) without building a JSON
// document first.
void append_json_string(std::string& out, std::string_view text);

// Appends `t` as RFC 3339 UTC with `fraction_digits` of a second (3 or 6):
// 2026-12-01T20:10:46.806982Z. Plain arithmetic, no locale or time zone.
void append_utc(std::string& out, std::chrono::system_clock::time_point t, int fraction_digits);

} // namespace gatehouse::metrics
