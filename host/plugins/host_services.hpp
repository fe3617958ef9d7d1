#pragma once

#include "state/state_backend.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gatehouse::plugins {

// kind is a GH_CHANGE_*; uri empty unless GH_CHANGE_RESOURCE_UPDATED.
using ChangeSink = std::function<void(int32_t kind, std::string_view uri)>;

// What the host function table reaches of the host a call belongs to. Every
// gh_call carries a pointer to its host's, so two hosts in one process keep
// apart and no host function reads a process global. Filled while the host
// is composed, before any call can run; read-only afterwards.
struct HostServices {
    // Where the state functions (ABI 1.3) keep families' values, under each
    // family's own prefix. Not owned; null: they answer GH_STATUS_INTERNAL.
    state::StateBackend* family_state = nullptr;
    // Where notify_changed goes (the host's notification bus); empty: dropped.
    ChangeSink changed;
    // The address pages are served at ("http://127.0.0.1:8765"), once the HTTP
    // transport listens; empty when none does. Tool calls see it in their
    // call_context as "pages_url" (with /pages/<family>).
    std::string pages_origin;
};

// A plugin may report a change from a thread of its own, outside any call
// (notify_changed with call NULL). The ABI gives no handle then, so the
// process keeps the list of hosts that are alive, and each of them hears it:
// the one process-wide table behind the host functions, which the ABI
// leaves no way around. A host is on the list while this lives.
class ChangesOutsideCalls {
public:
    explicit ChangesOutsideCalls(const HostServices& host);
    ~ChangesOutsideCalls();
    ChangesOutsideCalls(const ChangesOutsideCalls&) = delete;
    ChangesOutsideCalls& operator=(const ChangesOutsideCalls&) = delete;

private:
    const HostServices& host_;
};

} // namespace gatehouse::plugins
