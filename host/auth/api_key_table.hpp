#pragma once

#include "auth/token_verdict.hpp"
#include "config/config.hpp"

#include <string_view>
#include <vector>

namespace gatehouse::auth {

// Static API keys for simple private deployments: the configuration holds
// only each key's SHA-256, so the YAML file gives no key away.
class ApiKeyTable {
public:
    explicit ApiKeyTable(std::vector<config::ApiKeyEntry> keys);

    TokenVerdict verify(std::string_view key) const;

private:
    std::vector<config::ApiKeyEntry> keys_;
};

} // namespace gatehouse::auth
