#pragma once

#include <gatehouse/plugin.h>

namespace gatehouse::plugins {

// The one host function table every plugin receives. Static and immutable:
// what a function reaches of its host comes with the call
// (gh_call::host, plugins/host_services.hpp).
const gh_host_api* host_api();

} // namespace gatehouse::plugins
