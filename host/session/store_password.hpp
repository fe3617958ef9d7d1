#pragma once

#include "config/config.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace gatehouse::session {

// The credentials file exists but may not be used (readable by group or
// others, unreadable). The message names the file, never its content.
class CredentialsRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The store password: the first line of the credentials file the YAML names
// (which must not be readable by group or others), else the environment
// GATEHOUSE_STORE_PASSWORD (stdio only). It stays in host memory and is never
// put in a result, a refusal, a log line or a conversation file.
class StorePassword {
public:
    static std::optional<StorePassword> load(const config::SessionSettings& settings);

    // For the families' store connection only; never for text.
    const std::string& reveal() const { return secret_; }

private:
    explicit StorePassword(std::string secret) : secret_(std::move(secret)) {}
    std::string secret_;
};

} // namespace gatehouse::session
