#pragma once

#include <gatehouse/plugin.h>

#include "state/state_backend.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace gatehouse::plugins {

// The one host function table every plugin receives. Static and immutable.
const gh_host_api* host_api();

// Where notify_changed goes: set once the protocol layer exists (before it,
// and after clear, changes are dropped: nobody can be subscribed yet).
// kind is a GH_CHANGE_*; uri empty unless GH_CHANGE_RESOURCE_UPDATED.
using ChangeSink = std::function<void(int32_t kind, std::string_view uri)>;
void set_change_sink(ChangeSink sink);

// Where the state functions (ABI 1.3) keep families' values: the host's state
// backend, set once it exists (until then, and after clear, they answer
// GH_STATUS_INTERNAL). Not owned.
void set_family_state(state::StateBackend* backend);

// The address pages are served at ("http://127.0.0.1:8765"), once the HTTP
// transport listens; empty when none does. Tool calls see it in their
// call_context as "pages_url" (with /pages/<family>).
void set_pages_origin(std::string origin);
std::string pages_origin();

} // namespace gatehouse::plugins
