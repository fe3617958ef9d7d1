#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace gatehouse::protocol {

// Appends `value` to `out` as one line of compact JSON, byte for byte what
// nlohmann's dump(-1, ' ', false, error_handler_t::replace) writes: members
// in the object's order, UTF-8 as it is, control characters escaped, a
// string holding bytes that are not UTF-8 written with U+FFFD in their
// place. It writes into the one string directly and looks at a plain string
// a run at a time, where nlohmann writes a character at a time.
void append_json(std::string& out, const nlohmann::json& value);

// Appends `text` as one JSON string, as append_json writes a string value.
void append_json_string(std::string& out, std::string_view text);

} // namespace gatehouse::protocol
