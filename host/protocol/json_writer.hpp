#pragma once

#include <nlohmann/json.hpp>

#include <optional>
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

// A value that is JSON text written already, which append_json copies as it
// is: what every answer of a revision carries unchanged (the server's
// identity in `_meta`) is written once, when the server is made, instead of
// built into each answer's tree and written again. It is held as a binary
// value of a subtype of its own, which only append_json reads, so it belongs
// in a message on its way out through protocol::encode, never in one that
// anything else reads or that nlohmann dumps. `text` must be valid JSON.
nlohmann::json written_json(std::string_view text);

// The text of a value written_json made; nothing for any other value.
std::optional<std::string_view> written_text(const nlohmann::json& value);

} // namespace gatehouse::protocol
