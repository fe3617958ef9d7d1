#pragma once

#include "license/vendor_key.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gatehouse::config {

// Where a value came from, so every complaint can name file:line:column.
struct SourceLocation {
    std::string file;
    int line = 0;   // 1-based; 0 when unknown
    int column = 0; // 1-based; 0 when unknown

    std::string str() const;
};

struct PluginEntry {
    std::filesystem::path path; // resolved: absolute, or a bare file name found in plugin_dir
    std::string as_written;
    SourceLocation where;
};

struct DomainSettings {
    bool enabled = true;
    std::string prefix;                                 // prepended to every tool name of the family
    nlohmann::json settings = nlohmann::json::object(); // handed to the plugin's init
    SourceLocation where;
};

struct Limits {
    std::size_t max_message_bytes = 4 * 1024 * 1024;
    std::size_t max_json_depth = 64;
    unsigned workers = 8;
    unsigned max_in_flight = 256;
    unsigned page_size = 100;
    std::uint64_t tools_list_ttl_ms = 300000;
};

struct ServerIdentity {
    std::string name = "gatehouse";
    std::string title = "Gatehouse";
    std::string version;
    std::string instructions;
};

// The session story (YAML `session:`). Without the section the host runs no
// gate checks and says so in the log at start-up.
struct SessionSettings {
    bool configured = false;
    std::string backend = "sqlite";          // memory | sqlite
    std::filesystem::path state_file;        // sqlite file; default <data_dir>/state.sqlite3
    std::filesystem::path conversations_dir; // default <data_dir>/conversations
    std::uint64_t idle_expiry_s = 8 * 3600;  // a session unused this long is gone
    std::string pinned_store;                // pinned mode: both set
    std::string pinned_user;
    std::filesystem::path program_state_file;         // program mode: the file the desktop program writes
    std::filesystem::path credentials_file;           // the store password; must not be group/other-readable
    std::filesystem::path grants_file;                // grants: {<store>: {<user>: [scopes]}}, read at connect
    nlohmann::json grants = nlohmann::json::object(); // the same shape, inline in the YAML
    std::string rules;                                // general rules, answered by session_connect
    SourceLocation where;

    bool pinned() const { return !pinned_store.empty(); }
};

// Licensing (YAML `license:`, docs/licenses.md). Without the section no
// family is license-checked; with it, every family not listed in
// free_families needs the license file to cover it.
struct LicenseSettings {
    bool configured = false;
    std::filesystem::path file;             // default <data_dir>/license.json
    std::vector<std::string> free_families; // need no license
    license::VendorKeys vendor_keys;        // key id -> Ed25519 public key
    SourceLocation where;
};

struct Config {
    std::string source;             // file path, or "<embedded>"
    std::filesystem::path base_dir; // relative paths resolve against this
    ServerIdentity server;
    bool strict = false; // exit non-zero when any plugin fails to load
    bool gate = true;    // false: gated tools run unchecked (testing a plugin only)
    std::string log_level = "info";
    std::filesystem::path plugin_dir; // where bare plugin file names are looked up
    std::filesystem::path data_dir;   // where families keep their files
    std::vector<PluginEntry> plugins;
    std::map<std::string, DomainSettings> domains;
    Limits limits;
    std::vector<std::string> transports{"stdio"};
    SessionSettings session;
    LicenseSettings license;
};

} // namespace gatehouse::config
