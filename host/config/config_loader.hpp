#pragma once

#include "config/config.hpp"
#include "config/config_error.hpp"

#include <filesystem>
#include <string_view>

namespace gatehouse::config {

// Reads and checks a YAML config file. Throws ConfigError naming
// file:line:column of every mistake: anything unreadable, unknown or ill-typed.
Config load_config_file(const std::filesystem::path& file);

// What a config file holds and every mistake in it, without throwing (for
// check-config). `config` holds what was read well; it is empty when the file
// could not be read or parsed as YAML at all (`parsed` false).
struct ConfigReading {
    Config config;
    std::vector<ConfigProblem> problems; // in the order of the file
    bool parsed = false;
};
ConfigReading read_config_file(const std::filesystem::path& file);

// Reads YAML text that has no file of its own (the embedded default).
// Relative paths resolve against base_dir.
Config load_config_text(std::string_view yaml, const std::string& source_name, const std::filesystem::path& base_dir);

// Sets http.listen_host and listen_port from "host:port", "[v6]:port" or
// ":port"; throws std::invalid_argument saying what is wrong.
void apply_listen(HttpSettings& http, std::string_view text);

// The log levels log_level (and GATEHOUSE_LOG) may name, in one sentence.
inline constexpr const char* kLogLevelList = "trace, debug, info, warn, error, critical, off";
// Whether `name` is one of them.
bool is_log_level(std::string_view name);

// The default folder for families' files when the YAML names none.
std::filesystem::path default_data_dir();

} // namespace gatehouse::config
