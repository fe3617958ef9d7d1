#pragma once

#include "plugins/plugin_loader.hpp"
#include "plugins/tool_registry.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gatehouse::serve {

// What GET /status on the operators' listener answers besides whether the
// host is ready (the listener adds that, as /ready decides it): each family it serves and whether it serves now (a
// family of upstreams: whether its server is connected, and why not; a family with isolation: process, whether its
// process runs and how often it died), and what the configuration names that did not load, with where and why. Read
// anew on each request: the states change while the host serves.
nlohmann::json host_status(const plugins::ToolRegistry& registry, const std::vector<plugins::LoadFailure>& not_loaded);

} // namespace gatehouse::serve
