#pragma once

#include "schema/param_headers.hpp"

#include "crypto/openssl.hpp"
#include "upstream/bearer_source.hpp"
#include "upstream/client_transport.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace gatehouse::upstream {

// The parts of an http:// or https:// URL a request needs. Throws
// std::invalid_argument naming what is wrong with it.
struct HttpUrl {
    bool tls = false; // https://
    std::string host; // without the brackets of an IPv6 literal
    std::string port;
    std::string target; // path and query, "/" at least
    std::string host_header;
    static HttpUrl parse(const std::string& url);
};

// The URL as the log and `gatehouse plugins` show it: without its query,
// which may carry a key some servers take there.
std::string shown_url(const std::string& url);

// An upstream reached over Streamable HTTP (over TLS for https://, through
// a crypto::TlsTunnel per connection): each message a POST to its URL,
// the answer as one JSON body or an SSE stream of messages (progress first,
// the response last), each message at most the host's bound. A 2025-11-25
// server's Mcp-Session-Id is kept and sent, and the session is deleted at
// the end; a 2026-07-28 request carries its Mcp-Method and Mcp-Name headers.
// The host's own bearer token goes in Authorization, never the agent's; a
// request it refuses with 401 is sent once more when a new token can be had.
// Each POST is read on a thread of its own, so a request's progress arrives
// while it runs and its cancellation can be sent meanwhile. What a server
// sends outside any request travels on a stream held open: a 2025-11-25
// session's GET stream (opened after initialization, again from the last
// event id when it is cut; a server without one answers 405), or a 2026-07-28
// subscriptions/listen POST, which is read for as long as it lasts.
class HttpClientTransport final : public ClientTransport {
public:
    struct Options {
        std::string family;
        std::string url;
        std::shared_ptr<BearerSource> bearer; // null: no Authorization
        // With an https:// URL: how the server is checked, and the name its
        // certificate must carry (empty: the URL's host).
        std::shared_ptr<const crypto::TlsConnector> tls;
        std::string tls_server_name;
        std::size_t max_message_bytes = 4 * 1024 * 1024;
        std::chrono::milliseconds connect_timeout{10000};
        std::chrono::milliseconds read_timeout{130000}; // an answer (or the next SSE event) within this
        // A 2026-07-28 tool's x-mcp-header arguments, by the server's own
        // tool name: each goes along as an Mcp-Param-{name} header.
        std::function<std::vector<schema::ParamHeader>(const std::string& tool)> param_headers;
    };
    // Throws std::invalid_argument for a URL it cannot reach.
    explicit HttpClientTransport(Options options);
    ~HttpClientTransport() override;

    void start(Events events) override;
    bool send(const nlohmann::json& message) override;
    void give_up(std::int64_t id) override;
    void negotiated(const std::string& protocol_version) override;
    void close() override;
    std::string describe() const override { return options_.url; }

private:
    Options options_;
    HttpUrl url_;
    Events events_;
    std::mutex close_mutex_; // close() runs whole, one caller at a time
    std::mutex mutex_;
    std::condition_variable idle_, closing_;
    std::string session_id_, protocol_version_;
    bool closed_ = false;
    std::atomic<bool> told_closed_{false};
    struct Post {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
    };
    std::list<Post> posts_;
    std::set<int> sockets_; // of posts in flight, shut down by close()
    // Each request's POST in flight, by the request's id: the socket its
    // answer is read on (-1 between connections), and whether the session
    // gave the request up, so that its reading ends (give_up) and a POST
    // not yet started never starts.
    struct RequestPost {
        int fd = -1;
        bool given_up = false;
    };
    std::unordered_map<std::int64_t, RequestPost> requests_;
    unsigned in_flight_ = 0;
    // Answers to the server's own requests being posted, and how many were
    // dropped since they last all went out (kMaxAnswersInFlight).
    unsigned answers_in_flight_ = 0;
    unsigned answers_dropped_ = 0;
    static constexpr unsigned kMaxAnswersInFlight = 64;
    // A connection to the server (and over https:// its TLS session), kept
    // for the next POST when an answer ends cleanly on it.
    struct Connection {
        boost::asio::io_context io;
        std::unique_ptr<crypto::TlsTunnel> tunnel; // outlives the stream
        boost::beast::tcp_stream stream{io};
        std::chrono::steady_clock::time_point idle_since;
    };
    std::vector<std::unique_ptr<Connection>> kept_; // idle, newest last, at most kMaxIdle
    static constexpr std::size_t kMaxIdle = 4;
    // Reused only while younger than this: under the keep-alive timeout of
    // most servers (Node's is 5 s), so few are found closed by the server.
    static constexpr std::chrono::seconds kIdleReuse{4};
    // A new connection to the server within `timeout` (for https:// through
    // its tunnel). Throws what the connect or the handshake threw.
    std::unique_ptr<Connection> open_connection(std::chrono::milliseconds timeout) const;
    // An idle connection still open (unless `fresh`), else a new one; `reused` says which.
    std::unique_ptr<Connection> take_connection(bool& reused, bool fresh);
    static bool closed_before_answering(bool reused, bool answered,
                                        std::optional<std::chrono::steady_clock::time_point> written_at,
                                        const boost::beast::error_code& ec);
    void keep_connection(std::unique_ptr<Connection> connection);

    enum class Outcome { done, token_refused };
    enum class StreamEnd { again, not_offered, over };
    void start_server_stream();
    void hold_server_stream();
    StreamEnd read_server_stream(std::string& last_event_id);
    struct Tracked; // a socket close() (and give_up, for its request) cuts, while it is in use
    bool given_up(const nlohmann::json& message);
    void post(nlohmann::json message, std::string body);
    Outcome post_once(const nlohmann::json& message, const std::string& body, const std::string& token, bool may_renew);
    bool bearer_for(const nlohmann::json& message, std::string& token);
    void refuse(const nlohmann::json& message, const std::string& why, bool outage = true);
    void ended(const std::string& why);
    void delete_session();
};

} // namespace gatehouse::upstream
