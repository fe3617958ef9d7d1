#pragma once

#include "metrics/log_allowance.hpp"
#include "upstream/client_transport.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace gatehouse::upstream {

// The upstream answered a request with a JSON-RPC error.
struct UpstreamError : std::runtime_error {
    UpstreamError(int code, const std::string& message, nlohmann::json data)
        : std::runtime_error(message), code(code), data(std::move(data)) {}
    int code;
    nlohmann::json data;
};

// The upstream cannot answer: its connection ended, or it did not answer in time.
struct UpstreamUnavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The request was cancelled on our side; the upstream was told.
struct RequestCancelled : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One connection to one MCP server, the host as its client (the shape of
// the Python SDK's ClientSession): it negotiates the revision, sends
// requests and matches their answers, hands progress to the request that
// asked for it, answers what the server may ask of a client, and bounds
// everything it reads, so a hostile server cannot take the host down.
class ClientSession {
public:
    struct Options {
        std::string family; // names its log lines
        std::size_t max_json_depth = 64;
        std::chrono::milliseconds request_timeout{30000}; // requests with no timeout of their own
        std::string client_version;                       // the host's version, in clientInfo
        // Polled by every wait, as each request's own cancellation is: true
        // ends them all (RequestCancelled). The host stopping.
        std::function<bool()> abandoned;
        // What the asks held for its requests, not yet handed back, may hold
        // in all (their messages' text): past it an ask is refused.
        std::size_t max_held_ask_bytes = 64 * 1024 * 1024;
    };
    // From the transport's thread, for each notifications/<list>/list_changed.
    using ListChanged = std::function<void(const std::string& method)>;

    ClientSession(std::unique_ptr<ClientTransport> transport, Options options, ListChanged list_changed = {});
    ~ClientSession();
    ClientSession(const ClientSession&) = delete;
    ClientSession& operator=(const ClientSession&) = delete;

    // Negotiates: server/discover first (2026-07-28); a server that does not
    // know it gets initialize (2025-11-25 and the revisions before).
    // Throws UpstreamUnavailable or UpstreamError.
    void open(std::chrono::milliseconds timeout);

    const std::string& protocol_version() const { return protocol_version_; }
    bool stateless() const { return stateless_; } // 2026-07-28: every request carries its own _meta
    const nlohmann::json& server_info() const { return server_info_; }
    const nlohmann::json& capabilities() const { return capabilities_; }

    struct Waiting {
        std::chrono::milliseconds timeout{0};                // 0: Options::request_timeout
        std::function<bool()> cancelled;                     // polled while waiting
        std::function<void(const nlohmann::json&)> progress; // each notifications/progress's params
        // What the server asks of its client while it answers this request
        // (elicitation/create, sampling/createMessage, roots/list) comes back
        // in Reply::asked for the agent; without it, such asks are refused.
        bool relays = false;
        // For a 2026-07-28 server: the clientCapabilities this request's
        // _meta declares (those of the agent it is made for); null: none.
        nlohmann::json capabilities;
        // The owner key of the agent the request is made for; empty: the
        // host's own (a listing). Over stdio an ask names no request, so it
        // goes to a call only while no other owner's request may be running.
        std::string owner;
    };

    // A request the server made of this host, its client, during one of the host's.
    struct ServerRequest {
        nlohmann::json id;
        std::string method;
        // Its params as JSON text: an ask may wait for an agent for minutes,
        // and a parsed tree can take many times the memory its text does.
        std::string params;
        std::size_t bytes = 0; // its message's text: what the bound on held asks counts
    };
    // What a request came to: its result, or what the server asked before it
    // would answer. Then the request stays open: answer() or refuse() each
    // ask, and resume() it, or abandon() it.
    struct Reply {
        nlohmann::json result;
        std::vector<ServerRequest> asked;
        std::int64_t id = 0;   // the host's request
        std::size_t bytes = 0; // the size of the answer's text
    };

    // Sends a request and waits on the calling thread for its answer, or for
    // what the server asks meanwhile (Waiting::relays).
    // Throws UpstreamError, UpstreamUnavailable, RequestCancelled.
    Reply call(const std::string& method, const nlohmann::json& params, const Waiting& waiting);
    // Waits again for a request that Reply::asked left open. Throws as call()
    // does, and UpstreamUnavailable for a request that is no longer open.
    Reply resume(std::int64_t id, const Waiting& waiting);
    // Ends an open request the host will not wait for any longer: the server
    // is told it was cancelled, and what it asked and no one answered is refused.
    void abandon(std::int64_t id, const std::string& reason);
    // The host's answer to a server's request: its result, or an error.
    void answer(const nlohmann::json& server_request_id, nlohmann::json result);
    void refuse(const nlohmann::json& server_request_id, int code, const std::string& message);

    // A request whose server asks nothing of the agent (lists, completions).
    nlohmann::json request(const std::string& method, nlohmann::json params, const Waiting& waiting);
    nlohmann::json request(const std::string& method, nlohmann::json params);
    // What this host declares it can relay, as a client, to a 2025-11-25 server.
    static const nlohmann::json& relayed_capabilities();
    // At most this many asks wait in one request.
    static constexpr std::size_t kMaxAsked = 16;

    // Every page of a list method ("tools/list" with key "tools"), at most
    // kMaxItems items in at most kMaxPages pages of at most kMaxListedBytes
    // in all: each page is bounded by the message size, and this bounds what
    // a server that pages without end can make the host hold; all of them
    // by `deadline` (UpstreamError past it).
    std::vector<nlohmann::json> list_all(const std::string& method, const std::string& key,
                                         std::chrono::steady_clock::time_point deadline);

    static constexpr std::size_t kMaxItems = 10000;
    static constexpr std::size_t kMaxPages = 1000;
    static constexpr std::uint64_t kMaxListedBytes = 32 * 1024 * 1024;

    // 2026-07-28: asks by subscriptions/listen for the list_changed
    // notifications of the lists the server says can change (a 2025-11-25
    // server sends them unasked); they reach ListChanged. The subscription
    // lasts until the server ends it or the connection ends.
    void listen();
    enum class Listening {
        no,      // nothing to listen to, or not asked yet
        open,    // asked, and not ended
        ended,   // the server ended it, or its stream was cut: worth asking again
        refused, // the server does not know subscriptions/listen
    };
    Listening listening() const;

    bool alive() const;
    std::string why_closed() const;
    std::string describe() const { return transport_->describe(); }
    void close();

private:
    struct Pending;
    std::unique_ptr<ClientTransport> transport_;
    Options options_;
    ListChanged list_changed_;
    std::string protocol_version_;
    bool stateless_ = true; // while discovering, and for a 2026-07-28 server
    // What every 2026-07-28 request's _meta begins with, as JSON members: the
    // revision and the host as the client.
    std::string meta_members_;
    nlohmann::json server_info_ = nlohmann::json::object();
    nlohmann::json capabilities_ = nlohmann::json::object();

    mutable std::mutex mutex_;
    std::unordered_map<std::int64_t, std::shared_ptr<Pending>> pending_;
    // Requests the host stopped waiting for (cancelled, timed out, abandoned)
    // that the server has not answered: it may still be working on them, and
    // ask for them, until it answers or their time is past.
    struct Unsettled {
        std::string owner;
        std::chrono::steady_clock::time_point until;
    };
    std::unordered_map<std::int64_t, Unsettled> unsettled_;
    std::int64_t next_id_ = 0;
    std::size_t waiting_ = 0;    // threads waiting in wait(): one alone reads its own answer
    std::int64_t listen_id_ = 0; // the open subscriptions/listen, 0: none
    Listening listening_ = Listening::no;
    bool closed_ = false;
    std::string why_closed_;
    std::atomic<unsigned> unreadable_{0}; // lines that were not JSON-RPC, logged a few times
    metrics::LogAllowance log_;           // its notifications/message lines
    metrics::LogAllowance refusals_;      // the host's word on each ask it refused: a server may ask without end

    // True when `text` was the answer to the request `stream_of` names.
    bool receive(std::string_view text, const nlohmann::json& stream_of);
    void on_server_request(const nlohmann::json& message, std::size_t bytes, const nlohmann::json& stream_of);
    Reply wait(std::int64_t id, const std::shared_ptr<Pending>& pending, const std::string& method,
               const Waiting& waiting);
    void on_notification(const std::string& method, const nlohmann::json& params);
    // The host waits no longer for request `id`: it leaves pending_ (so
    // nothing more is handed to it) and becomes unsettled_, what it was asked
    // and no one answered is refused (`refusal`), its transport stops reading
    // the answer, and the server hears notifications/cancelled (`reason`).
    void stop_waiting(std::int64_t id, const std::string& reason, const std::string& refusal);
    // Whether an ask over stdio could be another owner's than `during`'s: a
    // request of another agent in flight, or one the server may still run.
    bool others_may_ask_locked(const Pending& during);
    void on_closed(const std::string& why);
    bool send(const nlohmann::json& message);
    // The host as an upstream's client: clientInfo in initialize and in a
    // 2026-07-28 request's _meta.
    nlohmann::json client_info() const;
    // Request `id`'s message as compact JSON, written straight from its
    // parts: a 2026-07-28 request's _meta (who asks, in which revision, what
    // it can do: `capabilities`, null for none) and, with `progress`, its
    // progressToken (the id) merged into `params`, which keeps its own _meta
    // members beside them.
    std::string request_text(std::int64_t id, const std::string& method, const nlohmann::json& params,
                             const nlohmann::json& capabilities, bool progress) const;
};

} // namespace gatehouse::upstream
