#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace gatehouse::protocol {

using Json = nlohmann::json;

// A message read in one pass: parsed into `value`, or refused as too deep
// (arrays and objects nested past the limit: the parse stops there, before
// it builds the rest) or as not JSON (`error` says what was wrong and at
// which line and column).
struct BoundedParse {
    enum class Outcome { parsed, too_deep, not_json };
    Outcome outcome = Outcome::parsed;
    Json value;
    std::string error;
    // Where the text itself says more than `value` does: some object named
    // a member twice (the last value is the one kept), or a number was kept
    // rounded (as nlohmann keeps it): an integer past 64 bits as floating
    // point, a number of more than 17 significant digits, or one too small
    // for a double as zero.
    bool names_repeated = false;
    bool numbers_rounded = false;
    bool parsed() const { return outcome == Outcome::parsed; }
};

// Reads `text` (one JSON value, whitespace around it allowed, a leading
// UTF-8 byte order mark skipped) into the same value nlohmann::json::parse
// builds: RFC 8259 strictly, strings checked to be UTF-8, integers kept as
// unsigned when not negative and as floating point only past 64 bits, the
// last of repeated member names winning. It writes the tree directly,
// reading each byte once and copying a string without escapes in one go, and
// keeps its open containers on a heap stack of its own, so a deep message
// cannot exhaust the thread's stack. Nothing half-built is handed on.
BoundedParse parse_bounded(std::string_view text, std::size_t max_depth = std::numeric_limits<std::size_t>::max());

} // namespace gatehouse::protocol
