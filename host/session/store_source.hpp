#pragma once

#include "config/config.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gatehouse::session {

// The program state file could not be read or understood: nobody can say
// which store is open, so whoever asked refuses.
class StoreSourceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Which store is open and who is logged in, as the host sees it now.
struct StoreView {
    bool pinned = false;
    bool program_running = false;
    std::string store; // empty when no store is open
    std::string user;
};

// Where store and user come from; the agent never chooses them. Either
// pinned in the YAML, or read from the small JSON file the desktop program
// writes (docs/program-state-file.md), read afresh on every question.
class StoreSource {
public:
    explicit StoreSource(const config::SessionSettings& settings);

    StoreView current() const;
    bool pinned() const { return !pinned_store_.empty(); }

private:
    std::string pinned_store_, pinned_user_;
    std::filesystem::path program_state_file_;
};

} // namespace gatehouse::session
