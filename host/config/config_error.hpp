#pragma once

#include "config/config.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace gatehouse::config {

// One configuration mistake and the place it was made.
struct ConfigProblem {
    SourceLocation where;
    std::string message;

    std::string str() const { return where.str() + ": " + message; }
};

// Every mistake found in one configuration, in the order of the file: what()
// holds one "file:line:column: message" line each.
class ConfigError : public std::runtime_error {
public:
    ConfigError(SourceLocation where, const std::string& message)
        : ConfigError(std::vector<ConfigProblem>{{std::move(where), message}}) {}
    explicit ConfigError(std::vector<ConfigProblem> problems)
        : std::runtime_error(joined(problems)), problems_(std::move(problems)) {}

    // The first mistake's place.
    const SourceLocation& where() const { return problems_.front().where; }
    const std::vector<ConfigProblem>& problems() const { return problems_; }

private:
    static std::string joined(const std::vector<ConfigProblem>& problems) {
        std::string text;
        for (const auto& p : problems)
            text += (text.empty() ? "" : "\n") + p.str();
        return text;
    }

    std::vector<ConfigProblem> problems_;
};

} // namespace gatehouse::config
