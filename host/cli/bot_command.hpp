#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gatehouse::cli {

// `gatehouse bot use SLUG [--config FILE]`: a person chooses the active bot of
// the sessions family among the bots its YAML configures
// (domains.sessions.settings.bots). The choice is written to the family's
// data folder (<data_dir>/sessions/active-bot), where the family reads it on
// every call, so a running host follows at once. `gatehouse bot` alone
// lists the bots and marks the active one. Returns the exit status.
int bot_command(const std::vector<std::string>& positional, const std::optional<std::string>& config_file);

} // namespace gatehouse::cli
