#pragma once

#include "config/config.hpp"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gatehouse::session {

// A file that holds a store password exists but may not be used (readable by
// group or others, unreadable, not in its format). The message names the
// file, never its content.
class CredentialsRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What a family needs to sign in to the store itself.
struct StoreLogin {
    std::string store;
    std::string user;
    std::string password;
};

// Where the store password comes from, in this order:
//   1. the program's saved settings (session.program_settings_file, a login
//      saved for exactly this store and user; docs/program-settings-file.md);
//   2. the first line of session.credentials_file;
//   3. GATEHOUSE_STORE_PASSWORD, only when the host serves stdio and no HTTP:
//      a host reachable over HTTP never hands an environment secret to its
//      remote callers.
// Each file is refused when group or others may read it. Everything is read
// afresh on every question: the host keeps no copy between calls.
class StoreCredentials {
public:
    StoreCredentials(const config::SessionSettings& settings, bool environment_allowed);

    // The sign-in for this store and user from the first source that has
    // one; std::nullopt when none has. Throws CredentialsRefused when a
    // source that is asked may not be used.
    std::optional<StoreLogin> login_for(const std::string& store, const std::string& user) const;

    // Every password a source holds now, for any store (what answers are
    // checked against). A refused source contributes none.
    std::vector<std::string> every_password() const;

    bool environment_allowed() const { return environment_allowed_; }

private:
    std::filesystem::path program_settings_file_;
    std::filesystem::path credentials_file_;
    bool environment_allowed_;
};

} // namespace gatehouse::session
