#include "upstream/client_session.hpp"

#include "protocol/json_rpc.hpp"
#include "protocol/json_writer.hpp"
#include "protocol/mcp_server.hpp"
#include "protocol/utf8_text.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <list>

namespace gatehouse::upstream {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr const char* kModern = "2026-07-28";
constexpr const char* kLegacy = "2025-11-25";
// What of a server's text the host keeps in a progress notice it relays,
// and in a log line of its message: enough to read, never a message's worth.
constexpr std::size_t kProgressMessageBytes = 1024;
constexpr std::size_t kLoggedMessageBytes = 2048;

// What a 2025-11-25 server may answer initialize with, newest first.
constexpr const char* kLegacyRevisions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
constexpr auto kPoll = 20ms; // how often a waiting request looks at its cancellation

constexpr const char* kProtocolVersion = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kClientInfo = "io.modelcontextprotocol/clientInfo";
constexpr const char* kClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr const char* kServerInfo = "io.modelcontextprotocol/serverInfo";

bool known_legacy_revision(const std::string& version) {
    for (const char* known : kLegacyRevisions)
        if (version == known) return true;
    return false;
}

// A server's error message, as the host's log and the agent's tool error
// quote it: a line of at most 1 KiB.
std::string error_text(const Json& error) {
    const auto message = error.find("message");
    return message != error.end() && message->is_string() ? protocol::quoted_text(message->get<std::string>(), 1024)
                                                          : "no message";
}

} // namespace

struct ClientSession::Pending {
    std::string owner;                // Waiting::owner
    Clock::duration timeout{};        // how long the host waits for it
    std::optional<Json> answer;       // the whole response: result or error
    std::size_t answer_bytes = 0;     // its text's size
    std::list<Json> progress;         // a deque would allocate on every request, though few hear progress
    bool relays = false;              // what the server asks meanwhile is handed back
    std::vector<ServerRequest> asked; // asked and not yet handed back
    bool gone = false;
    std::string why;
    std::condition_variable changed;
};

ClientSession::ClientSession(std::unique_ptr<ClientTransport> transport, Options options, ListChanged list_changed)
    : transport_(std::move(transport)), options_(std::move(options)), list_changed_(std::move(list_changed)),
      log_(options_.family), refusals_(options_.family) {
    protocol::append_json_string(meta_members_, kProtocolVersion);
    meta_members_ += ':';
    protocol::append_json_string(meta_members_, kModern);
    meta_members_ += ',';
    protocol::append_json_string(meta_members_, kClientInfo);
    meta_members_ += ':';
    protocol::append_json(meta_members_, client_info());
    transport_->start({[this](std::string_view text, const Json& stream_of) { return receive(text, stream_of); },
                       [this](const std::string& why) { on_closed(why); }});
}

ClientSession::~ClientSession() {
    close();
}

void ClientSession::close() {
    transport_->close();
}

bool ClientSession::alive() const {
    std::lock_guard lock(mutex_);
    return !closed_;
}

std::string ClientSession::why_closed() const {
    std::lock_guard lock(mutex_);
    return why_closed_;
}

void ClientSession::on_closed(const std::string& why) {
    std::lock_guard lock(mutex_);
    closed_ = true;
    why_closed_ = why;
    listen_id_ = 0;
    if (listening_ == Listening::open) listening_ = Listening::ended;
    for (auto& [id, pending] : pending_) {
        pending->gone = true;
        pending->why = why;
        pending->changed.notify_all();
    }
}

bool ClientSession::send(const Json& message) {
    return transport_->send(message);
}

Json ClientSession::client_info() const {
    return {{"name", "gatehouse"}, {"version", options_.client_version}};
}

std::string ClientSession::request_text(std::int64_t id, const std::string& method, const Json& params,
                                        const Json& capabilities, bool progress) const {
    // Members in name order, as a JSON object of the host's writes them.
    std::string text = R"({"id":)";
    text += std::to_string(id);
    text += R"(,"jsonrpc":"2.0","method":)";
    protocol::append_json_string(text, method);
    text += R"(,"params":)";
    // A 2026-07-28 request says who asks and what it can do, every time.
    if (!stateless_ && !progress) {
        protocol::append_json(text, params);
        text += '}';
        return text;
    }
    static const Json kNone = Json::object();
    const Json& given = params.is_object() ? params : kNone;
    text += '{';
    const auto& members = given.get_ref<const Json::object_t&>();
    // Params' own members go on either side of _meta, in name order.
    const auto meta_at = members.lower_bound("_meta");
    const auto append_member = [&](const auto& it) {
        protocol::append_json_string(text, it->first);
        text += ':';
        protocol::append_json(text, it->second);
    };
    for (auto it = members.begin(); it != meta_at; ++it) {
        append_member(it);
        text += ',';
    }
    text += R"("_meta":{)";
    const std::size_t meta_start = text.size();
    const auto member = [&](std::string_view name) {
        if (text.size() > meta_start) text += ',';
        protocol::append_json_string(text, name);
        text += ':';
    };
    if (const auto meta = given.find("_meta"); meta != given.end() && meta->is_object())
        for (const auto& [name, value] : meta->items()) {
            // What the host says of itself here stands over what params brought.
            if (progress && name == "progressToken") continue;
            if (stateless_ && (name == kProtocolVersion || name == kClientInfo || name == kClientCapabilities))
                continue;
            member(name);
            protocol::append_json(text, value);
        }
    if (stateless_) {
        if (text.size() > meta_start) text += ',';
        text += meta_members_;
        member(kClientCapabilities);
        protocol::append_json(text, capabilities.is_object() ? capabilities : kNone);
    }
    if (progress) {
        member("progressToken");
        text += std::to_string(id);
    }
    text += '}';
    for (auto it = meta_at; it != members.end(); ++it) {
        if (it->first == "_meta") continue;
        text += ',';
        append_member(it);
    }
    text += "}}";
    return text;
}

const Json& ClientSession::relayed_capabilities() {
    static const Json declared = {
        {"elicitation", {{"form", Json::object()}, {"url", Json::object()}}},
        {"sampling", Json::object()},
        {"roots", Json::object()},
    };
    return declared;
}

void ClientSession::open(std::chrono::milliseconds timeout) {
    Json discovered;
    try {
        discovered = request("server/discover", Json::object(), Waiting{.timeout = timeout});
    } catch (const UpstreamError&) {
        // A server of an earlier revision does not know server/discover.
    }
    if (discovered.is_object()) {
        const auto versions = discovered.find("supportedVersions");
        if (versions != discovered.end() && versions->is_array())
            for (const auto& v : *versions)
                if (v == kModern) protocol_version_ = kModern;
        if (!protocol_version_.empty()) {
            transport_->negotiated(protocol_version_);
            if (auto caps = discovered.find("capabilities"); caps != discovered.end() && caps->is_object())
                capabilities_ = *caps;
            if (auto meta = discovered.find("_meta"); meta != discovered.end() && meta->is_object())
                if (auto info = meta->find(kServerInfo); info != meta->end() && info->is_object()) server_info_ = *info;
            return;
        }
    }
    // From here on requests carry no _meta of the revision: the session has it.
    stateless_ = false;
    // A session declares once what every call of it may relay; an agent
    // whose client cannot answer an ask gets it refused on its behalf.
    const Json params = {
        {"protocolVersion", kLegacy}, {"capabilities", relayed_capabilities()}, {"clientInfo", client_info()}};
    Json initialized = request("initialize", params, Waiting{.timeout = timeout});
    const auto version = protocol::text_member(initialized, "protocolVersion");
    if (!known_legacy_revision(version))
        throw UpstreamUnavailable("it answered initialize with protocol version '" +
                                  protocol::quoted_text(version, 64) + "', which this host does not speak");
    protocol_version_ = version;
    transport_->negotiated(protocol_version_);
    if (auto caps = initialized.find("capabilities"); caps != initialized.end() && caps->is_object())
        capabilities_ = *caps;
    if (auto info = initialized.find("serverInfo"); info != initialized.end() && info->is_object())
        server_info_ = *info;
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
}

void ClientSession::listen() {
    if (!stateless_) return;
    const auto changes = [&](const char* list) {
        const auto offered = capabilities_.find(list);
        if (offered == capabilities_.end() || !offered->is_object()) return false;
        const auto flag = offered->find("listChanged");
        return flag != offered->end() && flag->is_boolean() && flag->get<bool>();
    };
    Json wanted = Json::object();
    if (changes("tools")) wanted["toolsListChanged"] = true;
    if (changes("prompts")) wanted["promptsListChanged"] = true;
    if (changes("resources")) wanted["resourcesListChanged"] = true;
    if (wanted.empty()) return;
    std::int64_t id;
    {
        std::lock_guard lock(mutex_);
        if (closed_ || listening_ == Listening::open || listening_ == Listening::refused) return;
        id = ++next_id_;
        listen_id_ = id;
        listening_ = Listening::open;
    }
    const Json params = {{"notifications", std::move(wanted)}};
    if (!transport_->send_written(request_text(id, "subscriptions/listen", params, Json::object(), false))) {
        std::lock_guard lock(mutex_);
        if (listen_id_ == id) listen_id_ = 0;
        listening_ = Listening::ended;
    }
}

ClientSession::Listening ClientSession::listening() const {
    std::lock_guard lock(mutex_);
    return listening_;
}

ClientSession::Reply ClientSession::call(const std::string& method, const Json& params, const Waiting& waiting) {
    auto pending = std::make_shared<Pending>();
    pending->relays = waiting.relays;
    pending->owner = waiting.owner;
    pending->timeout = waiting.timeout.count() > 0 ? waiting.timeout : options_.request_timeout;
    std::int64_t id;
    {
        std::lock_guard lock(mutex_);
        if (closed_) throw UpstreamUnavailable(why_closed_);
        id = ++next_id_;
        pending_.emplace(id, pending);
    }
    if (!transport_->send_written(request_text(id, method, params, waiting.capabilities, bool(waiting.progress)))) {
        std::lock_guard lock(mutex_);
        pending_.erase(id);
        throw UpstreamUnavailable("its connection ended before the request could be sent");
    }
    return wait(id, pending, method, waiting);
}

ClientSession::Reply ClientSession::resume(std::int64_t id, const Waiting& waiting) {
    std::shared_ptr<Pending> pending;
    {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(id);
        if (it == pending_.end()) throw UpstreamUnavailable("the request that asked is no longer open");
        pending = it->second;
    }
    return wait(id, pending, "the request", waiting);
}

void ClientSession::abandon(std::int64_t id, const std::string& reason) {
    stop_waiting(id, reason, reason);
}

void ClientSession::stop_waiting(std::int64_t id, const std::string& reason, const std::string& refusal) {
    std::vector<ServerRequest> unanswered;
    {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(id);
        if (it == pending_.end()) return;
        // Taken and forgotten at once: an ask that comes after finds no
        // request to wait in, and is refused there, never dropped unanswered.
        unanswered = std::move(it->second->asked);
        unsettled_[id] = {it->second->owner, Clock::now() + it->second->timeout};
        pending_.erase(it);
    }
    for (const auto& ask : unanswered)
        refuse(ask.id, -32603, refusal);
    transport_->give_up(id);
    send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", id}, {"reason", reason}}}});
}

bool ClientSession::others_may_ask_locked(const Pending& during) {
    const auto other = [&](const std::string& owner) { return !owner.empty() && owner != during.owner; };
    for (const auto& [_, p] : pending_)
        if (p.get() != &during && other(p->owner)) return true;
    const auto now = Clock::now();
    bool others = false;
    for (auto it = unsettled_.begin(); it != unsettled_.end();) {
        if (it->second.until <= now) {
            it = unsettled_.erase(it);
            continue;
        }
        others = others || other(it->second.owner);
        ++it;
    }
    return others;
}

void ClientSession::answer(const Json& server_request_id, Json result) {
    send({{"jsonrpc", "2.0"}, {"id", server_request_id}, {"result", std::move(result)}});
}

void ClientSession::refuse(const Json& server_request_id, int code, const std::string& message) {
    send({{"jsonrpc", "2.0"}, {"id", server_request_id}, {"error", {{"code", code}, {"message", message}}}});
}

// Waits for the answer of request `id`; it stays open (in pending_) only
// when the reply hands back what the server asked.
ClientSession::Reply ClientSession::wait(std::int64_t id, const std::shared_ptr<Pending>& pending,
                                         const std::string& method, const Waiting& waiting) {
    struct Forget {
        ClientSession* session;
        std::int64_t id;
        bool keep = false;
        ~Forget() {
            if (keep) return;
            std::lock_guard lock(session->mutex_);
            session->pending_.erase(id);
        }
    } forget{this, id};
    const auto timeout = waiting.timeout.count() > 0 ? waiting.timeout : options_.request_timeout;
    const auto deadline = Clock::now() + timeout;
    const auto ready = [&] {
        return pending->answer || pending->gone || !pending->progress.empty() || !pending->asked.empty();
    };
    std::unique_lock lock(mutex_);
    ++waiting_;
    struct Left {
        std::unique_lock<std::mutex>& lock;
        std::size_t& waiting;
        ~Left() {
            if (!lock.owns_lock()) lock.lock();
            --waiting;
        }
    } left{lock, waiting_};
    for (;;) {
        if (!ready()) {
            // This thread reads its own answer when no other does, else
            // waits for the one that reads to deliver it.
            const bool alone = waiting_ == 1;
            lock.unlock();
            const bool read = transport_->read_here(
                kPoll,
                [&] {
                    std::lock_guard held(mutex_);
                    return ready();
                },
                alone);
            lock.lock();
            if (!read)
                pending->changed.wait_for(lock, kPoll, ready);
            else if (waiting_ > 1) {
                lock.unlock();
                transport_->read_on();
                lock.lock();
            }
        }
        while (!pending->progress.empty()) {
            Json progress = std::move(pending->progress.front());
            pending->progress.pop_front();
            lock.unlock();
            if (waiting.progress) waiting.progress(progress);
            lock.lock();
        }
        if (pending->answer) break;
        if (pending->gone) throw UpstreamUnavailable(pending->why);
        // Before what the server asks, so a server that asks again at once
        // cannot keep a cancelled call from ending. Asks of a request that
        // gives up are refused: no one will answer them.
        if ((waiting.cancelled && waiting.cancelled()) || (options_.abandoned && options_.abandoned())) {
            lock.unlock();
            stop_waiting(id, "the agent's call was cancelled", "the agent's call was cancelled");
            throw RequestCancelled(method + " was cancelled");
        }
        if (!pending->asked.empty()) {
            Reply reply;
            reply.asked = std::move(pending->asked);
            pending->asked.clear();
            reply.id = id;
            forget.keep = true;
            return reply;
        }
        lock.unlock();
        if (Clock::now() >= deadline) {
            stop_waiting(id, "no answer within " + std::to_string(timeout.count()) + " ms",
                         "the host stopped waiting for the answer");
            throw UpstreamUnavailable("it did not answer " + method + " within " + std::to_string(timeout.count()) +
                                      " ms");
        }
        lock.lock();
    }
    Json answer = std::move(*pending->answer);
    const std::size_t answer_bytes = pending->answer_bytes;
    // What the server asked and then answered the call without: no agent
    // will be asked it now. Out of pending_ with the request, so no ask is
    // kept after this and left with no answer.
    std::vector<ServerRequest> unasked = std::move(pending->asked);
    pending_.erase(id);
    lock.unlock();
    for (const auto& ask : unasked)
        refuse(ask.id, -32603, "the call it was asked during was answered first");
    if (auto error = answer.find("error"); error != answer.end()) {
        const int code = error->is_object() && (*error)["code"].is_number_integer() ? (*error)["code"].get<int>() : 0;
        throw UpstreamError(code, error->is_object() ? error_text(*error) : "a malformed error",
                            error->is_object() ? error->value("data", Json()) : Json());
    }
    Reply reply;
    reply.id = id;
    reply.bytes = answer_bytes;
    reply.result = std::move(answer["result"]);
    if (!reply.result.is_object()) throw UpstreamError(0, "its answer to " + method + " is not an object", Json());
    return reply;
}

Json ClientSession::request(const std::string& method, Json params, const Waiting& waiting) {
    Waiting plain = waiting;
    plain.relays = false;
    return call(method, std::move(params), plain).result;
}

Json ClientSession::request(const std::string& method, Json params) {
    return request(method, std::move(params), Waiting{});
}

std::vector<Json> ClientSession::list_all(const std::string& method, const std::string& key,
                                          std::chrono::steady_clock::time_point deadline) {
    std::vector<Json> items;
    std::string cursor;
    std::uint64_t listed_bytes = 0;
    for (std::size_t page = 0;; ++page) {
        // The whole listing within one deadline: a server that answers each
        // page just in time would otherwise hold its family's start (and a
        // host's) for its pages' worth of timeouts.
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            throw UpstreamError(0, method + " was not listed whole in time (" + std::to_string(page) + " pages)",
                                Json());
        if (page == kMaxPages)
            throw UpstreamError(0, method + " went on past " + std::to_string(kMaxPages) + " pages", Json());
        if (listed_bytes > kMaxListedBytes)
            throw UpstreamError(0,
                                "its answers to " + method + " went on past " +
                                    std::to_string(kMaxListedBytes / (1024 * 1024)) + " MiB",
                                Json());
        Json params = Json::object();
        if (!cursor.empty()) params["cursor"] = cursor;
        Waiting waiting;
        waiting.timeout = left;
        Reply reply = call(method, std::move(params), waiting);
        listed_bytes += reply.bytes;
        Json& result = reply.result;
        auto list = result.find(key);
        if (list == result.end() || !list->is_array())
            throw UpstreamError(0, "its answer to " + method + " has no " + key + " list", Json());
        for (auto& item : *list) {
            if (items.size() == kMaxItems)
                throw UpstreamError(0, "it lists more than " + std::to_string(kMaxItems) + " " + key, Json());
            items.push_back(std::move(item));
        }
        auto next = result.find("nextCursor");
        if (next == result.end() || next->is_null()) break;
        if (!next->is_string() || next->get<std::string>().empty() || next->get<std::string>() == cursor)
            throw UpstreamError(0, "its answer to " + method + " has a nextCursor that leads nowhere", Json());
        cursor = next->get<std::string>();
    }
    return items;
}

bool ClientSession::receive(std::string_view text, const Json& stream_of) {
    Json message = protocol::parse_bounded(text, options_.max_json_depth).value; // null unless parsed
    if (protocol::text_member(message, "jsonrpc") != "2.0") {
        // MCP's stdio keeps stdout for messages only; one that is not is dropped, noted a few times.
        if (unreadable_.fetch_add(1) < 5)
            spdlog::warn("[{}] sent something that is not a JSON-RPC message (nested over {} levels, or not "
                         "JSON); ignored",
                         options_.family, options_.max_json_depth);
        return false;
    }
    const auto method = message.find("method");
    const auto id = message.find("id");
    if (method != message.end() && method->is_string()) {
        const Json params = message.value("params", Json::object());
        if (id != message.end()) {
            on_server_request(message, text.size(), stream_of);
            return false;
        }
        on_notification(method->get<std::string>(), params);
        return false;
    }
    if (id == message.end() || !id->is_number_integer()) return false; // not an answer to anything this host sent
    const bool on_its_stream = stream_of.is_number_integer() && stream_of == *id;
    const std::int64_t answered = id->get<std::int64_t>();
    // An answer that came on another of the server's streams (it may choose
    // any): the POST that asked is read no longer, or its thread and socket
    // would wait for an end the server need never send (a trickle of pings
    // keeps each read within its timeout).
    struct GiveUpItsPost {
        ClientTransport& transport;
        std::int64_t id;
        bool wanted;
        ~GiveUpItsPost() {
            if (wanted) transport.give_up(id);
        }
    } its_post{*transport_, answered, !on_its_stream};
    std::unique_lock lock(mutex_);
    if (listen_id_ != 0 && answered == listen_id_) {
        // A subscription is answered only when it ends.
        listen_id_ = 0;
        const auto error = message.find("error");
        const bool unknown =
            error != message.end() && error->is_object() && error->contains("code") && (*error)["code"] == -32601;
        listening_ = unknown ? Listening::refused : Listening::ended;
        lock.unlock();
        if (error == message.end())
            spdlog::info("[{}] ended the host's subscription to its changes", options_.family);
        else
            spdlog::warn("[{}] answered subscriptions/listen with an error{}: {}", options_.family,
                         unknown ? " (it does not know it; its list changes go unheard)" : "",
                         error->is_object() ? error_text(*error) : "a malformed error");
        return on_its_stream;
    }
    auto it = pending_.find(answered);
    if (it == pending_.end()) {
        unsettled_.erase(answered); // late: its request was cancelled or timed out, and is over now
        return on_its_stream;
    }
    it->second->answer = std::move(message);
    it->second->answer_bytes = text.size();
    it->second->changed.notify_all();
    return on_its_stream;
}

// What a server may ask of its client: ping is answered here; what only
// the agent can answer (a person's input, a model's sampling, its roots) is
// handed to the request of the host's that it was asked during. Over HTTP
// the stream it came on says which; over stdio nothing does, so it goes to
// the one request in flight that relays, and is refused when there are
// several (a call parked for its agent's answers counts: its request is
// still open on the server), or when
// another agent's request may be running there (in flight, or given up and
// not answered): the ask could be that agent's, and what it holds is never
// shown to another.
void ClientSession::on_server_request(const Json& message, std::size_t bytes, const Json& stream_of) {
    const Json& id = message["id"];
    if (!id.is_string() && !id.is_number_integer()) return; // not a request JSON-RPC can answer
    const std::string method = message["method"].get<std::string>();
    if (method == "ping") {
        answer(id, Json::object());
        return;
    }
    if (method != "elicitation/create" && method != "sampling/createMessage" && method != "roots/list") {
        refuse(id, -32601, "gatehouse does not answer " + method.substr(0, 100) + " for this server's family");
        return;
    }
    Json params = message.value("params", Json::object());
    if (!params.is_object()) {
        refuse(id, -32602, method + " needs its params as an object");
        return;
    }
    std::string refusal;
    {
        std::lock_guard lock(mutex_);
        std::shared_ptr<Pending> during;
        bool several = false;
        if (stream_of.is_number_integer()) {
            auto it = pending_.find(stream_of.get<std::int64_t>());
            if (it != pending_.end() && it->second->relays) during = it->second;
        } else if (stream_of.is_null()) {
            for (const auto& [_, p] : pending_)
                if (p->relays) {
                    several = during != nullptr;
                    during = p;
                    if (several) break;
                }
        }
        if (during && !several && stream_of.is_null() && others_may_ask_locked(*during)) {
            refusal = "another agent's request may be running on this server, and over stdio the host cannot tell "
                      "whose this is";
        } else if (during && !several) {
            // Counted as held: as text, no shorter than the message it came in.
            std::string text = params.dump();
            bytes = std::max(bytes, text.size());
            std::size_t held = 0; // asks not yet handed back, over every request (a parked call's among them)
            for (const auto& [_, p] : pending_)
                for (const auto& a : p->asked)
                    held += a.bytes;
            if (during->asked.size() >= kMaxAsked) {
                refusal = "the call it was asked during has " + std::to_string(kMaxAsked) + " asks waiting already";
            } else if (held + bytes > options_.max_held_ask_bytes) {
                refusal = "the asks waiting to be handed to agents hold " + std::to_string(held) + " bytes, and " +
                          std::to_string(bytes) + " more would pass the " +
                          std::to_string(options_.max_held_ask_bytes) + " the host keeps";
            } else {
                during->asked.push_back({id, method, std::move(text), bytes});
                during->changed.notify_all();
                return;
            }
        } else if (several) {
            refusal = "several calls are open on this server (in flight, or waiting for their agents' answers), "
                      "and over stdio the host cannot tell which one asks";
        }
    }
    // Outside any call the host, not an agent, is the client: it has no roots.
    if (refusal.empty() && method == "roots/list") {
        answer(id, {{"roots", Json::array()}});
        return;
    }
    if (refusal.empty()) refusal = "it was not asked during a call of the host's that an agent can answer";
    refusals_.write(spdlog::level::warn, "asked " + method + ", which was refused: " + refusal);
    refuse(id, -32603, "gatehouse cannot relay " + method + ": " + refusal);
}

void ClientSession::on_notification(const std::string& method, const Json& params) {
    if (method == "notifications/progress") {
        const auto token = params.find("progressToken");
        if (token == params.end() || !token->is_number_integer()) return;
        std::lock_guard lock(mutex_);
        auto it = pending_.find(token->get<std::int64_t>());
        if (it == pending_.end() || it->second->progress.size() >= 64) return; // a flood is thinned, not queued
        // Only what a progress notice carries is kept, its message cut short:
        // a server that sends notices the size of a message to a call that
        // waits on an agent would otherwise park megabytes on it.
        Json kept = {{"progressToken", *token}};
        for (const char* number : {"progress", "total"})
            if (auto value = params.find(number); value != params.end() && value->is_number()) kept[number] = *value;
        if (auto message = params.find("message"); message != params.end() && message->is_string())
            kept["message"] = protocol::cut_utf8(message->get<std::string>(), kProgressMessageBytes);
        it->second->progress.push_back(std::move(kept));
        it->second->changed.notify_all();
        return;
    }
    if (method.size() > 13 && method.compare(method.size() - 13, 13, "/list_changed") == 0) {
        if (list_changed_) list_changed_(method);
        return;
    }
    if (method == "notifications/message") {
        const auto data = params.find("data");
        const auto level = params.find("level");
        log_.write(spdlog::level::info,
                   (level != params.end() && level->is_string() ? protocol::quoted_text(level->get<std::string>(), 16)
                                                                : "info") +
                       ": " +
                       protocol::quoted_text(data == params.end() ? ""
                                             : data->is_string()
                                                 ? data->get<std::string>()
                                                 : data->dump(-1, ' ', false, Json::error_handler_t::replace),
                                             kLoggedMessageBytes));
    }
}

} // namespace gatehouse::upstream
