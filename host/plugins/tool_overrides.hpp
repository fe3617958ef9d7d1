#pragma once

#include "config/config.hpp"
#include "config/config_error.hpp"
#include "plugins/tool.hpp"

#include <memory>
#include <string>
#include <vector>

namespace gatehouse::plugins {

// Lays the operator's domains.<family>.tools over the tools a plugin has just
// declared, before they enter the registry: rules, risk, required scopes,
// gated, and rebuilds each changed tool's listing. Exposure is the
// disclosure's business (ToolDisclosure), read from the same config. Throws
// ConfigError naming every override whose tool the family does not declare.
void apply_tool_overrides(const config::DomainSettings& domain, const std::string& family,
                          std::vector<std::unique_ptr<Tool>>& tools, bool sessions);

} // namespace gatehouse::plugins
