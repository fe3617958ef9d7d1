#pragma once

#include <gatehouse/plugin.h>

namespace gatehouse::plugins {

// The one host function table every plugin receives. Static and immutable.
const gh_host_api* host_api();

} // namespace gatehouse::plugins
