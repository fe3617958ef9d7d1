#pragma once

#include "session/session.hpp"
#include "state/state_backend.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::session {

// What connect knows before the session exists.
struct SessionDraft {
    std::string principal;
    std::string store;
    std::string user;
    std::string topic;
    std::string folder;
    std::vector<std::string> scopes;
    std::vector<CriticalItem> critical;
};

// The live sessions, kept in a state backend so that (with SQLite) they
// outlive the host process. Every lookup is owner-checked: a handle of
// another principal answers exactly like an unknown one. A session unused
// for the idle expiry is gone. Backend failures surface as
// state::BackendError; callers refuse, never pass. Thread-safe.
class SessionTable {
public:
    using Now = std::function<std::int64_t()>; // milliseconds since the epoch

    SessionTable(std::unique_ptr<state::StateBackend> backend, std::chrono::seconds idle_expiry, Now now = {});

    // Opens the session of (principal, topic) anew: a new handle and nonce,
    // nothing remembered; the previous handle of that principal and topic
    // stops working.
    Session open(SessionDraft draft);

    // The live session behind `handle` when it belongs to `principal`; marks
    // it used (the idle expiry starts again).
    std::optional<Session> find(std::string_view handle, std::string_view principal);

    // Changes the session under the table's lock (read, change, write), so
    // two calls of one session cannot lose each other's change. Returns the
    // changed session, or nullopt when it is not live for this principal.
    std::optional<Session> update(std::string_view handle, std::string_view principal,
                                  const std::function<void(Session&)>& change);

    std::int64_t expires_ms(const Session& s) const { return s.last_used_ms + idle_ms_; }
    std::int64_t now_ms() const { return now_(); }
    const char* backend_name() const { return backend_->name(); }
    // The backend itself, which families share through the ABI's state functions.
    state::StateBackend& backend() const { return *backend_; }

private:
    std::optional<Session> load(std::string_view handle, std::string_view principal);
    void store(const Session& s);

    std::unique_ptr<state::StateBackend> backend_;
    std::int64_t idle_ms_;
    Now now_;
    std::mutex mutex_;
};

} // namespace gatehouse::session
