#pragma once

#include "protocol/connection.hpp"
#include "state/state_backend.hpp"
#include "transport/http_media_types.hpp"
#include "transport/http_service.hpp"
#include "transport/page_route.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <chrono>
#include <optional>
#include <string>

namespace gatehouse::transport {

// One TCP connection of the HTTP transport, HTTP/1.1 with keep-alive: reads
// a request, answers it (JSON, an SSE stream, or a status), then reads the
// next. Everything runs on the connection's strand; answers produced on
// worker threads are posted to it.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
public:
    using Socket = boost::asio::ip::tcp::socket;
    using Request = boost::beast::http::request<boost::beast::http::string_body>;

    HttpConnection(Socket socket, HttpService& service);
    ~HttpConnection();

    void start();

    // From any thread: one message of exchange `exchange` (the final answer
    // when `final`). Messages of an exchange that already ended are dropped.
    void deliver(std::uint64_t exchange, std::string encoded, bool final, int status, std::string headers = {});
    void deliver_end(std::uint64_t exchange);

    // From any thread: the transport is draining; close once idle.
    void drain();

    // From any thread: cancel what runs and close now.
    void abort();

private:
    // lingering: the last answer is out and the sending side shut; what the
    // client still sends is read and dropped, so a reset does not destroy
    // that answer before the client reads it (RFC 9112 §9.6).
    enum class Phase { waiting_for_request, reading_request, answering, streaming, lingering, closed };

    // Counts a chunked body's chunk extensions against what the header
    // section left of kMaxHeaderBytes (Beast's parser calls it per chunk).
    struct ChunkExtensionBudget {
        std::size_t left = 0;
        void operator()(std::uint64_t size, boost::beast::string_view extensions, boost::beast::error_code& ec);
    };

    void wait_for_bytes();
    void on_bytes(boost::system::error_code ec, std::size_t n);
    void parse_request();
    void parse_pipelined();
    void finishing(bool finishing);
    bool on_header_section();
    bool discard_trailer_fields();
    void refuse_framing(boost::beast::error_code ec);
    void on_request(Request request);
    bool refuse_unsupported_legacy_version(const Request& request, const protocol::Json& id);
    void authenticate(Request request);
    void on_authenticated(const Request& request);
    bool refuse_missing_scope(const protocol::Request& decoded, const protocol::Json& id);
    // A POSTed JSON-RPC message, read once, with what routing needs of it.
    struct Posted {
        protocol::Json message;
        std::string method;       // "" when it names none
        protocol::Json id;        // null unless a request with a string or integer id
        bool is_request = false;  // a method and an id
        bool is_response = false; // no method, and a result or an error
    };
    // What looking up (or opening) a 2025-11-25 session found.
    struct LegacyLookup {
        enum class Outcome { found, opened, not_found, full, unavailable } outcome = Outcome::not_found;
        std::shared_ptr<protocol::Connection> session;
        std::string opened_id; // opened: the new session's id
        std::string error;     // unavailable: what the state backend said
    };
    void on_post(const Request& request);
    LegacyLookup find_legacy_session(const std::string& id, const auth::Principal& principal);
    void in_legacy_session(const Request& request, Posted posted, AcceptedAnswers answers, LegacyLookup lookup);
    bool refuse_lookup(const LegacyLookup& lookup, const protocol::Json& id);
    void serve_post(const Request& request, Posted posted, AcceptedAnswers answers,
                    std::shared_ptr<protocol::Connection> mcp, bool legacy, const std::string& session_header);
    void on_get(const Request& request);
    void open_session_stream(const Request& request, LegacyLookup lookup);
    void on_delete(const Request& request);
    void away_from_loop(std::function<std::function<void()>()> work);
    // A family's page, shown or acted on away from the loop (kPageWork), the
    // answer written back on it.
    void serve_page_away(Request request, std::shared_ptr<const plugins::ToolRegistry> pages, std::size_t path_size);
    // away_from_loop when `away`, else the work and what follows it here, now.
    void here_or_away(bool away, std::function<std::function<void()>()> work);
    // The two ends of a hop off the loop: until resumed, the connection
    // answers (reads no further request) and its request counts as in
    // flight (a drain waits for it). resume_on_loop may be called from any
    // thread; `then` runs on the loop unless the connection closed.
    void leave_loop();
    void resume_on_loop(std::function<void()> then);
    bool claim_stream_or_refuse(const protocol::Json& id);
    void begin_exchange(const std::shared_ptr<protocol::Connection>& mcp, std::shared_ptr<protocol::Outbound> reply,
                        const protocol::Json& id, protocol::Incoming&& incoming, const std::string& session_header,
                        bool legacy, AcceptedAnswers answers);

    void on_message(std::uint64_t exchange, std::string encoded, bool final, int status, const std::string& headers);
    void start_stream(const std::string& extra_headers = "");
    void release_exchange();
    void finish_exchange();
    void peer_gone();

    // Whole responses with no body of their own kind: a status and a JSON-RPC
    // error (no id unless given), or an empty body.
    void respond_status(int status, const std::string& text = "", const std::string& extra_headers = "");
    void respond_error(int status, const protocol::Json& id, int code, const std::string& message,
                       const std::string& extra_headers = "");
    void respond_json(int status, std::string body, std::string_view extra_headers = {},
                      std::string_view more_headers = {});
    void respond_state_unavailable(const protocol::Json& id, const state::BackendError& error);
    void respond_page(const PageResponse& page);
    bool is_metrics_path(std::string_view path) const;
    void respond_metrics();

    void write(std::string bytes);
    void write(std::string first, std::string second);
    // Queues bytes for the next gather write; false when the connection
    // ended or was dropped for holding too much unread.
    bool queue(std::string bytes);
    void do_write();
    void arm_timer(std::uint64_t ms);
    void disarm_timer();
    void wait_for_deadline();
    void close_gracefully();
    void close();

    Socket socket_;
    HttpService& service_;
    boost::asio::steady_timer timer_;
    std::optional<std::chrono::steady_clock::time_point> deadline_; // none: no deadline runs
    bool timer_waiting_ = false;                                    // a wait is pending on timer_
    std::uint64_t timer_wait_ = 0;                                  // which wait is the current one
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    ChunkExtensionBudget chunk_budget_;
    std::size_t request_bytes_ = 0; // of the request being read, so far
    std::size_t header_bytes_ = 0;  // of its header section, once read
    std::size_t header_fields_ = 0; // fields in that header section: any after them are trailers
    std::size_t lingered_bytes_ = 0;
    std::chrono::steady_clock::time_point linger_began_; // the half-close
    // Bytes written that the client has not yet acknowledged (SIOCOUTQ).
    std::size_t unsent_bytes();
    Phase phase_ = Phase::waiting_for_request;
    bool keep_alive_ = true;
    bool reading_ = false;            // a read is pending on the socket
    bool parse_when_written_ = false; // a pipelined request waits until the answers before it are written
    bool finishing_ = false;          // one of HttpService::finishing
    bool heard_a_request_ = false;    // a whole request came: from then on, idle waits are keep-alive's
    bool drained_ = false;            // drain(): no request after the current one
    auth::Principal principal_;       // the caller of the request being handled
    // Inside the handler of a read: a quick call the bytes it read made
    // (CallSite::io_loop) waits in call_after_read_, and the handler runs it
    // as its last act. Posted instead, it would run behind every handler
    // the loop has queued (each connection the same epoll wait found
    // readable): all their requests read and held before the first is
    // answered.
    bool in_read_handler_ = false;
    std::function<void()> call_after_read_;

    // The exchange in progress: the MCP request being answered.
    std::uint64_t exchange_ = 0;
    std::shared_ptr<protocol::Connection> mcp_connection_;
    protocol::Json request_id_;
    bool legacy_ = false;
    bool counted_ = false;       // holds one of the service's exchanges
    bool stream_slot_ = false;   // holds one of the service's SSE slots
    std::string stream_owner_;   // whose share of the SSE slots it is
    bool may_stream_ = true;     // false: no SSE slot was free, or the client takes no SSE: notifications are dropped
    bool must_stream_ = false;   // the client takes SSE but not JSON: even a lone result comes as a stream
    std::string session_header_; // "Mcp-Session-Id: …\r\n" on the answer to initialize
    // The 2025-11-25 session whose GET stream this exchange is: told when
    // the stream ends, so the session stops sending to it.
    std::weak_ptr<protocol::Outbound> session_stream_;

    std::deque<std::string> writes_;
    std::size_t queued_bytes_ = 0;
    bool writing_ = false;
};

// A 2025-11-25 session's connection as this transport serves it: what the
// host sends on the session's own channel goes to its GET stream, when this
// instance holds one. It keeps who owns the session (`owner`'s identity)
// and none of the scopes or client of the token that made it: each request
// in the session is authorised as its own token (Request::principal).
std::shared_ptr<protocol::Connection> make_legacy_connection(const auth::Principal& owner);

} // namespace gatehouse::transport
