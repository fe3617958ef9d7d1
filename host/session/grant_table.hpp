#pragma once

#include "config/config.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace gatehouse::session {

// The grants file could not be read or understood.
class GrantsUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The scopes a store's owner granted each user: `grants:` inline in the YAML
// plus the grants file the owner edits, read afresh at every connect (a change
// takes effect when the agent reconnects; the gate answers from the session).
class GrantTable {
public:
    explicit GrantTable(const config::SessionSettings& settings);

    std::vector<std::string> scopes(const std::string& store, const std::string& user) const;

private:
    nlohmann::json inline_grants_;
    std::filesystem::path grants_file_;
};

} // namespace gatehouse::session
