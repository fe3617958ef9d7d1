#include "session/session_table.hpp"

#include "session/random_token.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace gatehouse::session {

namespace {

constexpr std::string_view kSessionPrefix = "session/";
constexpr std::string_view kTopicPrefix = "session-topic/";
// A principal's opened topics: {hex(topic): opened at, ms}.
constexpr std::string_view kPrincipalPrefix = "session-principal/";
constexpr int kMaxAttempts = 16;

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

std::string session_key(std::string_view handle) {
    std::string key;
    key.reserve(kSessionPrefix.size() + handle.size());
    key.append(kSessionPrefix).append(handle);
    return key;
}

} // namespace

SessionTable::SessionTable(std::unique_ptr<state::StateBackend> backend, std::chrono::seconds idle_expiry, Now now,
                           std::size_t max_per_principal)
    : backend_(std::move(backend)),
      idle_ms_(std::chrono::duration_cast<std::chrono::milliseconds>(idle_expiry).count()),
      touch_interval_ms_(std::min<std::int64_t>(1000, idle_ms_ / 100)),
      now_(now ? std::move(now) : Now(&system_now_ms)),
      max_per_principal_(std::max<std::size_t>(1, max_per_principal)) {}

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

    const auto index = topic_key(s.principal, s.topic);
    const std::chrono::milliseconds ttl(idle_ms_);
    const auto record = std::make_shared<const Session>(s);
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
        const auto previous = backend_->get(index);
        write(record, nullptr);
        // The index names the new session only over what was read: another
        // open of this topic in between (here or on another instance) is
        // then replaced in its turn, never left live beside this one. It
        // expires as its session does (a lookup renews both): topics are
        // the caller's to name, and an index kept for good would grow with
        // every topic ever used.
        const bool indexed =
            previous ? backend_->replace(index, *previous, s.handle, ttl) : backend_->add(index, s.handle, ttl);
        if (!indexed) {
            backend_->erase(session_key(s.handle));
            continue;
        }
        if (previous) {
            backend_->erase(session_key(*previous));
            std::lock_guard lock(mutex_);
            forget(*previous);
        }
        // The bound is kept best-effort: the session is open whatever
        // happens to the list now, and the next open bounds it again.
        try {
            bound_topics(s.principal, s.topic, s.created_ms);
        } catch (const state::BackendError& e) {
            spdlog::warn("session: a principal's list of topics was not updated: {}", e.what());
        }
        return s;
    }
    throw state::BackendError("the topic's session kept changing under concurrent opens");
}

void SessionTable::bound_topics(const std::string& principal, const std::string& topic, std::int64_t now) {
    const std::string key = std::string(kPrincipalPrefix) + hex(principal);
    const std::string own = hex(topic);
    // The topic index of a listed (hex) topic name: topic_key's, spelled from the name.
    const std::string index_prefix = std::string(kTopicPrefix) + hex(principal) + "/";
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
        const auto text = backend_->get(key);
        nlohmann::json topics = nlohmann::json::object();
        if (text) {
            topics = nlohmann::json::parse(*text, nullptr, false);
            if (!topics.is_object()) topics = nlohmann::json::object();
        }
        topics[own] = now;
        std::vector<std::string> ended;
        if (topics.size() > max_per_principal_) {
            // Topics whose session already expired leave the list first;
            // then the ones opened longest ago, ending their sessions.
            std::vector<std::pair<std::int64_t, std::string>> by_age;
            for (const auto& [name, opened] : topics.items())
                by_age.emplace_back(opened.is_number_integer() ? opened.get<std::int64_t>() : 0, name);
            std::sort(by_age.begin(), by_age.end());
            std::vector<std::string> live;
            for (const auto& [opened, name] : by_age) {
                if (name == own) continue;
                if (backend_->get(index_prefix + name))
                    live.push_back(name);
                else
                    topics.erase(name);
            }
            for (std::size_t i = 0; topics.size() > max_per_principal_ && i < live.size(); ++i) {
                ended.push_back(index_prefix + live[i]);
                topics.erase(live[i]);
            }
        }
        const std::string updated = topics.dump();
        const std::chrono::milliseconds ttl(idle_ms_);
        if (!(text ? backend_->replace(key, *text, updated, ttl) : backend_->add(key, updated, ttl))) continue;
        for (const auto& index : ended)
            if (const auto handle = backend_->take(index)) {
                backend_->erase(session_key(*handle));
                std::lock_guard lock(mutex_);
                forget(*handle);
            }
        if (!ended.empty())
            spdlog::info("session: a principal opened more than {} topics' sessions; {} of the oldest ended",
                         max_per_principal_, ended.size());
        return;
    }
    throw state::BackendError("a principal's list of topics kept changing under concurrent opens");
}

std::shared_ptr<const Session> SessionTable::find(std::string_view handle, std::string_view principal) {
    auto loaded = load(handle, principal);
    if (!loaded) return nullptr;
    if (const auto now = now_(); now - loaded->session->last_used_ms >= touch_interval_ms_) {
        auto touched = std::make_shared<Session>(*loaded->session);
        touched->last_used_ms = now;
        // Over the record as read only: when another call (here or on
        // another instance) changed it meanwhile, its change stands and the
        // touch waits for the next lookup.
        if (write(touched, &loaded->text)) {
            renew_indexes(*touched);
            return touched;
        }
    }
    return std::move(loaded->session);
}

void SessionTable::renew_indexes(const Session& s) {
    const std::chrono::milliseconds ttl(idle_ms_);
    // Only while it still names this session: a newer one of the topic keeps its place.
    backend_->replace(topic_key(s.principal, s.topic), s.handle, s.handle, ttl);
    // As it is: what it lists is bound_topics' to change.
    const std::string list = std::string(kPrincipalPrefix) + hex(s.principal);
    if (const auto text = backend_->get(list)) backend_->replace(list, *text, *text, ttl);
}

std::optional<Session> SessionTable::update(std::string_view handle, std::string_view principal,
                                            const std::function<void(Session&)>& change) {
    // Read, change, and write only over what was read (StateBackend::replace);
    // a record changed in between is read again and the change made anew.
    for (int attempt = 0; attempt < 16; ++attempt) {
        auto loaded = load(handle, principal);
        if (!loaded) return std::nullopt;
        auto s = std::make_shared<Session>(*loaded->session);
        change(*s);
        s->last_used_ms = now_();
        if (write(s, &loaded->text)) {
            renew_indexes(*s);
            return *s;
        }
    }
    throw state::BackendError("a session record kept changing under concurrent updates");
}

std::optional<SessionTable::Loaded> SessionTable::load(std::string_view handle, std::string_view principal) {
    if (!well_formed(handle)) return std::nullopt;
    const std::string key = session_key(handle);
    auto text = backend_->get(key);
    if (!text) {
        std::lock_guard lock(mutex_);
        forget(handle);
        return std::nullopt;
    }
    Loaded out;
    {
        std::lock_guard lock(mutex_);
        if (auto it = decoded_.find(handle); it != decoded_.end() && it->second.text == *text)
            out.session = it->second.session;
    }
    if (!out.session) {
        try {
            out.session = std::make_shared<const Session>(Session::from_json(nlohmann::json::parse(*text)));
        } catch (const std::exception& e) {
            throw state::BackendError(std::string("a session record in the state backend is damaged: ") + e.what());
        }
        std::lock_guard lock(mutex_);
        remember(*text, out.session);
    }
    if (out.session->principal != principal) return std::nullopt;
    if (out.session->last_used_ms + idle_ms_ <= now_()) {
        backend_->erase(key);
        std::lock_guard lock(mutex_);
        forget(handle);
        return std::nullopt;
    }
    out.text = std::move(*text);
    return out;
}

bool SessionTable::write(std::shared_ptr<const Session> s, const std::string* expected) {
    auto text = s->to_json().dump();
    const std::string key = session_key(s->handle);
    const auto ttl = std::chrono::milliseconds(idle_ms_);
    if (expected) {
        if (!backend_->replace(key, *expected, text, ttl)) return false;
    } else {
        backend_->put(key, text, ttl);
    }
    std::lock_guard lock(mutex_);
    remember(std::move(text), std::move(s));
    return true;
}

void SessionTable::remember(std::string text, std::shared_ptr<const Session> s) {
    // Bounded by a wholesale reset: live sessions are decoded again once, and
    // a flood of handles cannot grow the map.
    if (decoded_.size() >= kMaxDecoded && !decoded_.contains(s->handle)) decoded_.clear();
    const std::string handle = s->handle;
    decoded_.insert_or_assign(handle, Decoded{std::move(text), std::move(s)});
}

void SessionTable::forget(std::string_view handle) {
    if (auto it = decoded_.find(handle); it != decoded_.end()) decoded_.erase(it);
}

} // namespace gatehouse::session
