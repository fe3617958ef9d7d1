#include "session/session_table.hpp"

#include "session/random_token.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gatehouse::session {

namespace {

constexpr std::string_view kSessionPrefix = "session/";
constexpr std::string_view kTopicPrefix = "session-topic/";

std::int64_t system_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Handles are 32 lowercase hex digits; anything else is never looked up, so a
// hostile "handle" cannot reach other keys of the backend.
bool well_formed(std::string_view handle) {
    if (handle.size() != 32) return false;
    for (char c : handle)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// Principal and topic are free text; hex keeps the key free of separators.
std::string hex(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : text) {
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
    return out;
}

std::string topic_key(std::string_view principal, std::string_view topic) {
    return std::string(kTopicPrefix) + hex(principal) + "/" + hex(topic);
}

} // namespace

SessionTable::SessionTable(std::unique_ptr<state::StateBackend> backend, std::chrono::seconds idle_expiry, Now now)
    : backend_(std::move(backend)),
      idle_ms_(std::chrono::duration_cast<std::chrono::milliseconds>(idle_expiry).count()),
      touch_interval_ms_(std::min<std::int64_t>(1000, idle_ms_ / 100)),
      now_(now ? std::move(now) : Now(&system_now_ms)) {}

Session SessionTable::open(SessionDraft draft) {
    Session s;
    s.handle = random_token(16);
    s.nonce = random_token(32);
    s.principal = std::move(draft.principal);
    s.store = std::move(draft.store);
    s.user = std::move(draft.user);
    s.topic = std::move(draft.topic);
    s.folder = std::move(draft.folder);
    s.scopes = std::move(draft.scopes);
    s.critical = std::move(draft.critical);
    s.created_ms = s.last_used_ms = now_();

    std::lock_guard lock(mutex_);
    const auto index = topic_key(s.principal, s.topic);
    if (auto previous = backend_->get(index)) {
        backend_->erase(std::string(kSessionPrefix) + *previous);
        forget(*previous);
    }
    store(s);
    backend_->put(index, s.handle, std::chrono::milliseconds(0));
    return s;
}

std::optional<Session> SessionTable::find(std::string_view handle, std::string_view principal) {
    std::lock_guard lock(mutex_);
    auto s = load(handle, principal);
    if (!s) return std::nullopt;
    if (const auto now = now_(); now - s->last_used_ms >= touch_interval_ms_) {
        s->last_used_ms = now;
        store(*s);
    }
    return s;
}

std::optional<Session> SessionTable::update(std::string_view handle, std::string_view principal,
                                            const std::function<void(Session&)>& change) {
    std::lock_guard lock(mutex_);
    auto s = load(handle, principal);
    if (!s) return std::nullopt;
    change(*s);
    s->last_used_ms = now_();
    store(*s);
    return s;
}

std::optional<Session> SessionTable::load(std::string_view handle, std::string_view principal) {
    if (!well_formed(handle)) return std::nullopt;
    const std::string key = std::string(kSessionPrefix) + std::string(handle);
    auto text = backend_->get(key);
    if (!text) {
        forget(std::string(handle));
        return std::nullopt;
    }
    Session s;
    if (auto known = decoded_.find(std::string(handle)); known != decoded_.end() && known->second.text == *text) {
        s = known->second.session;
    } else {
        try {
            s = Session::from_json(nlohmann::json::parse(*text));
        } catch (const std::exception& e) {
            throw state::BackendError(std::string("a session record in the state backend is damaged: ") + e.what());
        }
        remember(std::move(*text), s);
    }
    if (s.principal != principal) return std::nullopt;
    if (s.last_used_ms + idle_ms_ <= now_()) {
        backend_->erase(key);
        forget(s.handle);
        return std::nullopt;
    }
    return s;
}

void SessionTable::store(const Session& s) {
    auto text = s.to_json().dump();
    backend_->put(std::string(kSessionPrefix) + s.handle, text, std::chrono::milliseconds(idle_ms_));
    remember(std::move(text), s);
}

void SessionTable::remember(std::string text, const Session& s) {
    // Bounded by a wholesale reset: live sessions are decoded again once, and
    // a flood of handles cannot grow the map.
    if (decoded_.size() >= kMaxDecoded && !decoded_.contains(s.handle)) decoded_.clear();
    decoded_.insert_or_assign(s.handle, Decoded{std::move(text), s});
}

} // namespace gatehouse::session
