#pragma once

#include <gatehouse/plugin.h>

#include <spdlog/common.h>

namespace gatehouse::plugins {

// The one host function table every plugin receives. Static and immutable:
// what a function reaches of its host comes with the call
// (gh_call::host, plugins/host_services.hpp).
const gh_host_api* host_api();

// A GH_LOG_* level as the host's log writes it.
spdlog::level::level_enum log_level(int32_t level);

} // namespace gatehouse::plugins
