#include "transport/legacy_http_sessions.hpp"

#include "protocol/mcp_server.hpp"
#include "session/random_token.hpp"
#include "state/notification_bus.hpp"
#include "state/state_backend.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gatehouse::transport {

using protocol::Json;

namespace {

// Where a relayed answer's own reply would go: nowhere, the instance that
// received it answered the client already.
class Discarding final : public protocol::Outbound {
public:
    void send(const Json&) override {}
};

} // namespace

// What shared sessions need: the records, the bus, and the protocol layer
// that writes and resumes a connection's handshake. Held by the hooks of
// the connections it made through a weak pointer, so a connection that
// outlives the transport writes nothing.
struct LegacyHttpSessions::Sharing {
    state::StateBackend& records;
    state::NotificationBus& bus;
    protocol::McpServer& server;
    MakeConnection make;
    std::chrono::seconds idle;

    static std::string key(const std::string& id) { return "legacy-session/" + id; }

    // Written with the idle expiry, so a session nobody uses goes by itself
    // on every instance.
    void save(const std::string& id, const std::string& owner, protocol::Connection& connection) {
        const Json record = {{"owner", owner}, {"handshake", protocol::McpServer::legacy_record(connection)}};
        records.put(key(id), record.dump(), idle);
    }

    // The handshake of a session that exists changed (a request on this
    // instance set its log level or subscriptions): written over the record
    // only while it is still there, so a request that ends after the
    // session's DELETE (on any instance) does not bring the session back.
    // The instances holding a copy resume it. What is written is this
    // instance's whole handshake: two instances changing one session in the
    // same moment (a log level here, a subscription there) leave the later
    // write, which every copy then follows.
    void update(const std::string& id, const std::string& owner, protocol::Connection& connection) {
        Json record = {{"owner", owner}, {"handshake", protocol::McpServer::legacy_record(connection)}};
        const std::string text = record.dump();
        for (int attempt = 0; attempt < 3; ++attempt) {
            const auto current = records.get(key(id));
            if (!current) return;
            if (records.replace(key(id), *current, text, idle)) {
                bus.relay({id, Json{{"record", std::move(record)}}.dump()});
                return;
            }
        }
        spdlog::warn(
            "2025-11-25 session: its record kept changing under this write; the change stays on this instance");
    }

    void hook(const std::shared_ptr<Sharing>& self, const std::string& id, const std::string& owner,
              protocol::Connection& connection) {
        connection.handshake_changed = [weak = std::weak_ptr<Sharing>(self), id, owner](protocol::Connection& c) {
            if (auto sharing = weak.lock()) sharing->update(id, owner, c);
        };
    }
};

LegacyHttpSessions::LegacyHttpSessions(std::size_t capacity, std::size_t per_principal, std::chrono::seconds idle)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      per_principal_(std::clamp<std::size_t>(per_principal, 1, std::max<std::size_t>(capacity, 1))), idle_(idle) {}

LegacyHttpSessions::~LegacyHttpSessions() {
    // Waits out a relayed message being handled on the bus's thread.
    if (sharing_) sharing_->bus.on_session_message({});
}

void LegacyHttpSessions::share(state::StateBackend& records, state::NotificationBus& bus, protocol::McpServer& server,
                               MakeConnection make) {
    sharing_ = std::make_shared<Sharing>(Sharing{records, bus, server, std::move(make), idle_});
    bus.on_session_message([this](const state::SessionMessage& message) { on_relayed(message); });
}

// Its requests still running are cancelled, its listeners leave the bus (a
// request still holding the connection would otherwise keep them there) and
// its GET streams end. Every way a session goes (DELETE, expiry, eviction,
// a relayed close, shutdown) comes through here.
void LegacyHttpSessions::end(const Entry& session) {
    session.connection->stop_following();
    session.connection->cancel_all();
    session.connection->outbound_ptr()->close();
}

LegacyHttpSessions::Table::iterator LegacyHttpSessions::erase(Table::iterator it) {
    end(it->second);
    if (const auto held = held_by_.find(it->second.owner); held != held_by_.end() && --held->second == 0)
        held_by_.erase(held);
    return sessions_.erase(it);
}

void LegacyHttpSessions::drop_idle(std::chrono::steady_clock::time_point now, const std::string* only_of) {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (now - it->second.last_used > idle_ && (!only_of || it->second.owner == *only_of))
            it = erase(it);
        else
            ++it;
    }
}

void LegacyHttpSessions::evict_from_largest_holder() {
    std::size_t most = 0;
    for (const auto& [owner, count] : held_by_)
        most = std::max(most, count);
    // Among the sessions of whoever holds the most (several may), the one
    // unused the longest.
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
        if (held_by_[it->second.owner] == most &&
            (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used))
            oldest = it;
    if (oldest != sessions_.end()) erase(oldest);
}

// Room for one more session in the table (under mutex_), whoever holds it.
void LegacyHttpSessions::make_room(std::chrono::steady_clock::time_point now) {
    if (sessions_.size() >= capacity_) drop_idle(now, nullptr);
    if (sessions_.size() >= capacity_) evict_from_largest_holder();
}

std::optional<std::string> LegacyHttpSessions::open(std::shared_ptr<protocol::Connection> connection) {
    const auto now = std::chrono::steady_clock::now();
    std::string owner = connection->principal().owner_key();
    std::string id = session::random_token(16);
    {
        std::lock_guard lock(mutex_);
        const auto held = [&] {
            const auto it = held_by_.find(owner);
            return it == held_by_.end() ? std::size_t{0} : it->second;
        };
        if (held() >= per_principal_) drop_idle(now, &owner);
        if (held() >= per_principal_) return std::nullopt;
        make_room(now);
        ++held_by_[owner];
        sessions_.emplace(id, Entry{connection, owner, now, now});
    }
    if (sharing_) {
        sharing_->hook(sharing_, id, owner, *connection);
        try {
            sharing_->save(id, owner, *connection);
        } catch (...) {
            std::lock_guard lock(mutex_);
            if (auto it = sessions_.find(id); it != sessions_.end()) erase(it);
            throw;
        }
    }
    return id;
}

std::shared_ptr<protocol::Connection> LegacyHttpSessions::find(const std::string& id,
                                                               const auth::Principal& principal) {
    if (sharing_) return find_shared(id, principal);
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    if (now - it->second.last_used > idle_) {
        erase(it);
        return nullptr;
    }
    if (it->second.owner != principal.owner_key()) return nullptr;
    it->second.last_used = now;
    return it->second.connection;
}

// The record decides: gone there, gone here; this instance's copy (made
// now when it has none) is brought up to it.
std::shared_ptr<protocol::Connection> LegacyHttpSessions::find_shared(const std::string& id,
                                                                      const auth::Principal& principal) {
    const std::string owner = principal.owner_key();
    const auto text = sharing_->records.get(Sharing::key(id));
    const Json record = text ? Json::parse(*text, nullptr, false) : Json();
    const auto now = std::chrono::steady_clock::now();
    std::shared_ptr<protocol::Connection> connection;
    bool touch = false;
    {
        std::lock_guard lock(mutex_);
        auto it = sessions_.find(id);
        if (!record.is_object() || !record.contains("owner")) {
            if (it != sessions_.end()) erase(it);
            return nullptr;
        }
        if (record["owner"] != owner) return nullptr;
        if (it == sessions_.end()) {
            make_room(now);
            connection = sharing_->make(principal);
            sharing_->hook(sharing_, id, owner, *connection);
            ++held_by_[owner];
            it = sessions_.emplace(id, Entry{connection, owner, now, now}).first;
        }
        it->second.last_used = now;
        connection = it->second.connection;
        // The record's expiry slides with use, rewritten now and then
        // rather than on every request.
        if (now - it->second.record_touched > idle_ / 10) {
            it->second.record_touched = now;
            touch = true;
        }
    }
    sharing_->server.resume_legacy(*connection, record.value("handshake", Json()));
    if (touch) {
        // Only over the text read above: a record changed meanwhile (another
        // instance saved a subscription) or erased (a DELETE) stays as it is.
        try {
            sharing_->records.replace(Sharing::key(id), *text, *text, sharing_->idle);
        } catch (const state::BackendError& e) {
            spdlog::warn("2025-11-25 session: cannot renew a record's expiry: {}", e.what());
        }
    }
    return connection;
}

bool LegacyHttpSessions::close(const std::string& id, const std::string& owner) {
    if (sharing_) {
        const auto text = sharing_->records.get(Sharing::key(id));
        const Json record = text ? Json::parse(*text, nullptr, false) : Json();
        const auto record_owner = record.is_object() ? record.find("owner") : record.end();
        if (record_owner == record.end() || *record_owner != owner) return false;
        sharing_->records.erase(Sharing::key(id));
        sharing_->bus.relay({id, R"({"closed":true})"});
    }
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.owner != owner) return sharing_ != nullptr;
    erase(it);
    return true;
}

bool LegacyHttpSessions::relay_client_message(const std::string& id, const Json& message) {
    return !sharing_ || sharing_->bus.relay({id, Json{{"client", message}}.dump()});
}

// What another instance relayed about a session this one holds a copy of.
void LegacyHttpSessions::on_relayed(const state::SessionMessage& message) {
    const Json body = Json::parse(message.body, nullptr, false);
    if (!body.is_object()) return;
    std::shared_ptr<protocol::Connection> connection;
    {
        std::lock_guard lock(mutex_);
        auto it = sessions_.find(message.session);
        if (it == sessions_.end()) return;
        if (body.contains("closed")) {
            erase(it);
            return;
        }
        connection = it->second.connection;
    }
    if (const auto record = body.find("record"); record != body.end() && record->is_object()) {
        sharing_->server.resume_legacy(*connection, record->value("handshake", Json()));
    } else if (const auto client = body.find("client"); client != body.end() && client->is_object()) {
        // A response resolves the request of ours waiting for it; a
        // cancellation stops the request of ours it names. Either is
        // nothing here when the request runs elsewhere.
        sharing_->server.handle(connection, Json(*client), std::make_shared<Discarding>());
    }
}

void LegacyHttpSessions::close_all() {
    std::lock_guard lock(mutex_);
    for (auto& [id, entry] : sessions_)
        end(entry);
    sessions_.clear();
    held_by_.clear();
}

std::size_t LegacyHttpSessions::size() {
    std::lock_guard lock(mutex_);
    return sessions_.size();
}

} // namespace gatehouse::transport
