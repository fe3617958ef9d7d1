#pragma once

#include "config/config.hpp"
#include "config/config_error.hpp"

#include <filesystem>
#include <string_view>

namespace gatehouse::config {

// Reads and checks a YAML config file. Throws ConfigError naming
// file:line:column for anything unreadable, unknown or ill-typed.
Config load_config_file(const std::filesystem::path& file);

// Reads YAML text that has no file of its own (the embedded default).
// Relative paths resolve against base_dir.
Config load_config_text(std::string_view yaml, const std::string& source_name, const std::filesystem::path& base_dir);

// Sets http.listen_host and listen_port from "host:port", "[v6]:port" or
// ":port"; throws std::invalid_argument saying what is wrong.
void apply_listen(HttpSettings& http, std::string_view text);

// The default folder for families' files when the YAML names none.
std::filesystem::path default_data_dir();

} // namespace gatehouse::config
