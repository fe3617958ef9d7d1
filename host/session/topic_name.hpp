#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::session {

// A topic is one word: 1-64 characters, each a letter of any script (UTF-8),
// a digit, '-' or '_'. It names a folder, so anything else (dots, slashes,
// spaces, control characters, NUL, broken UTF-8) is refused. Returns nullopt
// for a good topic, else a sentence for the agent.
std::optional<std::string> topic_problem(std::string_view topic);

} // namespace gatehouse::session
