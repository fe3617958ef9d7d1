#pragma once

#include <gatehouse/plugin.h>

#include <functional>
#include <string_view>

namespace gatehouse::plugins {

// The one host function table every plugin receives. Static and immutable.
const gh_host_api* host_api();

// Where notify_changed goes: set once the protocol layer exists (before it,
// and after clear, changes are dropped: nobody can be subscribed yet).
// kind is a GH_CHANGE_*; uri empty unless GH_CHANGE_RESOURCE_UPDATED.
using ChangeSink = std::function<void(int32_t kind, std::string_view uri)>;
void set_change_sink(ChangeSink sink);

} // namespace gatehouse::plugins
