#pragma once

#include "config/config.hpp"

#include <stdexcept>
#include <string>

namespace gatehouse::config {

// A configuration mistake, with the place it was made.
class ConfigError : public std::runtime_error {
public:
    ConfigError(SourceLocation where, const std::string& message)
        : std::runtime_error(where.str() + ": " + message), where_(std::move(where)) {}

    const SourceLocation& where() const { return where_; }

private:
    SourceLocation where_;
};

} // namespace gatehouse::config
