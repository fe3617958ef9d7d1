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
#include <unordered_map>

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

    static constexpr std::size_t kDefaultMaxPerPrincipal = 64;

    SessionTable(std::unique_ptr<state::StateBackend> backend, std::chrono::seconds idle_expiry, Now now = {},
                 std::size_t max_per_principal = kDefaultMaxPerPrincipal);

    // Opens the session of (principal, topic) anew: a new handle and nonce,
    // nothing remembered; the previous handle of that principal and topic
    // stops working, also when two opens of the topic race (the later one
    // to take the topic's index keeps its session). A principal keeps at
    // most `max_per_principal` topics' sessions: opening one more ends the
    // one opened longest ago (after forgetting topics whose session already
    // expired), so no caller can fill the backend with sessions.
    Session open(SessionDraft draft);

    // The live session behind `handle` when it belongs to `principal`; marks
    // it used (the idle expiry starts again). Marking writes the record back
    // at most once per touch interval (a second, or a hundredth of the idle
    // expiry when that is shorter), so a run of gated calls does not rewrite
    // the backend on every call; a session may thus expire up to that
    // interval early, never late. The session is shared and never changed:
    // a record whose text is unchanged since it was last decoded costs no
    // copy.
    std::shared_ptr<const Session> find(std::string_view handle, std::string_view principal);

    // Changes the session: read, change, and write only over the record as
    // read (compare and set), so two calls of one session, on this instance
    // or on two, cannot lose each other's change. `change` may run more than
    // once. Returns the changed session, or nullopt when it is not live for
    // this principal.
    std::optional<Session> update(std::string_view handle, std::string_view principal,
                                  const std::function<void(Session&)>& change);

    std::int64_t expires_ms(const Session& s) const { return s.last_used_ms + idle_ms_; }
    std::int64_t now_ms() const { return now_(); }
    const char* backend_name() const { return backend_->name(); }
    // The backend itself, which families share through the ABI's state functions.
    state::StateBackend& backend() const { return *backend_; }

private:
    struct Loaded {
        std::shared_ptr<const Session> session;
        std::string text; // the record as read
    };
    std::optional<Loaded> load(std::string_view handle, std::string_view principal);
    // Records (principal, topic) in the principal's list of opened topics and
    // ends the sessions of the topics that fall out of it.
    void bound_topics(const std::string& principal, const std::string& topic, std::int64_t now);
    // A session used keeps alive what counts it: its topic's index (the
    // next connect of the topic reads it) and its principal's list of
    // topics (max_per_principal reads it). Both expire when idle; a session
    // kept in use past them would be left out of the count, and its
    // principal could open as many again.
    void renew_indexes(const Session& s);
    // Writes the record; with `expected`, only over that text (false when it changed).
    bool write(std::shared_ptr<const Session> s, const std::string* expected);
    // Under mutex_.
    void remember(std::string text, std::shared_ptr<const Session> s);
    void forget(std::string_view handle);

    // A record as last read from or written to the backend, decoded. The
    // backend stays the truth (another host process may change a session):
    // the record is fetched on every lookup and decoded again only when its
    // text differs from what was decoded last.
    struct Decoded {
        std::string text;
        std::shared_ptr<const Session> session;
    };
    // Looked up by the handle as the call gave it, without a copy.
    struct HandleHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view handle) const { return std::hash<std::string_view>()(handle); }
    };
    static constexpr std::size_t kMaxDecoded = 4096;

    std::unique_ptr<state::StateBackend> backend_;
    std::int64_t idle_ms_;
    std::int64_t touch_interval_ms_;
    Now now_;
    std::size_t max_per_principal_;
    std::mutex mutex_; // guards decoded_ only: no backend call is made under it
    std::unordered_map<std::string, Decoded, HandleHash, std::equal_to<>> decoded_; // by handle
};

} // namespace gatehouse::session
