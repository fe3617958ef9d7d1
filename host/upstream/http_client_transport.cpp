#include "upstream/http_client_transport.hpp"

#include "protocol/json_rpc.hpp"
#include "protocol/utf8_text.hpp"

#include "license/base64.hpp"
#include "upstream/bearer_challenge.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/range/iterator_range.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <optional>
#include <stdexcept>

namespace gatehouse::upstream {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using tcp = asio::ip::tcp;

namespace {

bool ascii_printable(std::string_view text) {
    for (char c : text)
        if (c < 0x20 || c > 0x7e) return false;
    return true;
}

// A header's value as 2026-07-28 carries text: as it is when a header can
// hold it, else Base64 between =?base64? and ?=. Text that itself looks
// like that wrapper is wrapped too: sent as it is, a server (or a proxy)
// would read the decoded bytes, not what the body says.
std::string header_text(const std::string& text) {
    const bool wrapper_like = text.starts_with("=?") && text.ends_with("?=");
    const bool plain =
        ascii_printable(text) && !wrapper_like && (text.empty() || (text.front() != ' ' && text.back() != ' '));
    return plain ? text : "=?base64?" + license::base64_encode(text) + "?=";
}

// An x-mcp-header argument as its header: strings as text, numbers in
// decimal, booleans as true/false; anything else (or nothing) sends none.
std::optional<std::string> param_header_value(const Json& arguments, const std::vector<std::string>& path) {
    const Json* node = &arguments;
    for (const auto& step : path) {
        if (!node->is_object()) return std::nullopt;
        auto it = node->find(step);
        if (it == node->end()) return std::nullopt;
        node = &*it;
    }
    if (node->is_string()) return header_text(node->get<std::string>());
    if (node->is_boolean()) return node->get<bool>() ? "true" : "false";
    if (node->is_number()) return node->dump();
    return std::nullopt;
}

// What a 2026-07-28 request names in Mcp-Name.
const char* name_field(const std::string& method) {
    if (method == "tools/call" || method == "prompts/get") return "name";
    if (method == "resources/read") return "uri";
    return nullptr;
}

// The events of an SSE stream: `data:` lines joined, one message per blank
// line; `event:` other than message is not JSON-RPC.
class SseReader {
public:
    SseReader(std::size_t bound, std::function<void(std::string_view)> deliver)
        : bound_(bound), deliver_(std::move(deliver)) {}
    // False when an event (or a line) is over the bound.
    bool feed(std::string_view bytes) {
        pending_.append(bytes);
        std::size_t start = 0;
        for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
            std::string_view line(pending_.data() + start, end - start);
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.empty()) {
                if (!data_.empty() && (event_.empty() || event_ == "message")) deliver_(data_);
                data_.clear();
                event_.clear();
            } else if (line.rfind("data:", 0) == 0) {
                line.remove_prefix(5);
                if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
                if (!data_.empty()) data_ += '\n';
                data_ += line;
                if (data_.size() > bound_) return false;
            } else if (line.rfind("event:", 0) == 0) {
                line.remove_prefix(6);
                if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
                event_ = std::string(line.substr(0, 64));
            } else if (line.rfind("id:", 0) == 0) {
                line.remove_prefix(3);
                if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
                // A stream is resumed from it in a header: only what a header carries.
                if (line.size() <= 256 && ascii_printable(line)) last_id_ = std::string(line);
            } // retry: and comments need nothing here
        }
        pending_.erase(0, start);
        return pending_.size() <= bound_;
    }
    const std::string& last_id() const { return last_id_; }

private:
    std::size_t bound_;
    std::function<void(std::string_view)> deliver_;
    std::string pending_, data_, event_, last_id_;
};

// What every request of the host's to an upstream carries.
template <class Body>
http::request<Body> request_to(http::verb verb, const HttpUrl& url, const char* accept, const std::string& token,
                               const std::string& session_id, const std::string& version) {
    http::request<Body> request{verb, url.target, 11};
    request.set(http::field::host, url.host_header);
    request.set(http::field::user_agent, "gatehouse");
    request.set(http::field::accept, accept);
    if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
    if (!session_id.empty()) request.set("Mcp-Session-Id", session_id);
    if (!version.empty()) request.set("MCP-Protocol-Version", version);
    return request;
}

// 2026-07-28 routing: the method, the name it is about, and the tool's
// x-mcp-header arguments as headers, so a proxy can route on them unparsed.
void set_routing_headers(http::request<http::string_body>& request, const Json& message, const std::string& method,
                         const HttpClientTransport::Options& options) {
    request.set("Mcp-Method", method);
    const auto params = message.find("params");
    const char* field = name_field(method);
    if (!field || params == message.end() || !params->is_object()) return;
    const auto name = params->find(field);
    if (name == params->end() || !name->is_string()) return;
    request.set("Mcp-Name", header_text(name->get<std::string>()));
    if (method != "tools/call" || !options.param_headers) return;
    const auto arguments = params->find("arguments");
    if (arguments == params->end() || !arguments->is_object()) return;
    for (const auto& header : options.param_headers(name->get<std::string>()))
        if (auto value = param_header_value(*arguments, header.path)) request.set("Mcp-Param-" + header.name, *value);
}

// Runs one asynchronous operation of a connection's stream to its end on
// the connection's own io_context, and gives its error. Every read and
// write goes this way: Beast's blocking calls do not honour the stream's
// deadline (in Boost 1.74 its timeouts hold for asynchronous operations
// only), so a server that never answered would hold the thread, and its
// socket, until the transport closed, and a DELETE it never answered would
// hold close() itself.
template <class Start> beast::error_code run_to_end(boost::asio::io_context& io, Start&& start) {
    beast::error_code result;
    start([&](beast::error_code ec, std::size_t) { result = ec; });
    io.run();
    io.restart();
    return result;
}

template <class Start> void run_or_throw(boost::asio::io_context& io, Start&& start) {
    if (auto ec = run_to_end(io, std::forward<Start>(start))) throw beast::system_error(ec);
}

// Reads what comes next of an answer's body into `take`, by `until` (none:
// a held subscription stream). False when `take` says the body went over
// its bound. Throws beast::system_error when the read fails.
template <class Take>
bool read_body_part(boost::asio::io_context& io, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                    http::response_parser<http::buffer_body>& parser,
                    std::optional<std::chrono::steady_clock::time_point> until, Take&& take) {
    char chunk[16 * 1024];
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    if (until)
        stream.expires_at(*until);
    else
        stream.expires_never();
    auto ec = run_to_end(io, [&](auto handler) { http::async_read_some(stream, buffer, parser, std::move(handler)); });
    if (ec == http::error::need_buffer) ec = {};
    if (ec) throw beast::system_error(ec);
    return take(std::string_view(chunk, sizeof chunk - parser.get().body().size));
}

// An answer's head is bounded here, its body message by message as it is
// read (the body limit is therefore none). Not boost::none: Boost 1.74
// compares a Content-Length against it as if it were a limit of zero.
void bound_head(http::response_parser<http::buffer_body>& parser) {
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    parser.header_limit(16 * 1024);
}

// A header's values as one text, joined as the list they make (RFC 9110
// §5.3); empty when absent.
template <class Fields> std::string header_of(const Fields& fields, http::field name) {
    std::string joined;
    for (const auto& field : boost::make_iterator_range(fields.equal_range(name)))
        joined += (joined.empty() ? "" : ", ") + std::string(field.value());
    return joined;
}

// The id of a request of the host's (a message with a method and an id),
// the key its POST is known by.
std::optional<std::int64_t> request_id(const Json& message) {
    const auto id = message.find("id");
    if (id == message.end() || !id->is_number_integer() || !message.contains("method")) return std::nullopt;
    return id->get<std::int64_t>();
}

// How long a stream is read on after it carried the answer it was opened
// for: a server ends it there, and one that goes on holds nothing longer.
constexpr auto kAfterAnswer = std::chrono::seconds(1);

// What of an answer may wait unparsed: its head (bounded on its own), a
// chunk's size line, trailers. A server that sends more of those, say a
// chunk-size line that never ends, ends the connection, not the host's memory.
constexpr std::size_t kMostUnparsedBytes = 1 << 20;

// What a server sends on its own stream answers no request of the host's.
const Json kServerStream = false;
constexpr auto kFirstStreamBackoff = std::chrono::seconds(1);
constexpr auto kLongestStreamBackoff = std::chrono::seconds(30);

} // namespace

std::string shown_url(const std::string& url) {
    const auto query = url.find('?');
    return query == std::string::npos ? url : url.substr(0, query) + "?…";
}

HttpUrl HttpUrl::parse(const std::string& url) {
    HttpUrl out;
    out.tls = url.rfind("https://", 0) == 0;
    if (!out.tls && url.rfind("http://", 0) != 0)
        throw std::invalid_argument("'" + shown_url(url) + "' is not an http:// or https:// URL");
    std::string rest = url.substr(out.tls ? 8 : 7);
    const auto slash = rest.find_first_of("/?#");
    std::string authority = rest.substr(0, slash);
    const char* default_port = out.tls ? "443" : "80";
    out.target = slash == std::string::npos ? "/" : rest.substr(slash);
    if (const auto hash = out.target.find('#'); hash != std::string::npos) out.target.erase(hash);
    if (out.target.empty() || out.target.front() != '/') out.target.insert(0, "/");
    if (authority.find('@') != std::string::npos)
        throw std::invalid_argument("a URL with credentials in it; give the token as token_file or token_env");
    out.host_header = authority;
    if (!authority.empty() && authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string::npos)
            throw std::invalid_argument("'" + shown_url(url) + "' has an unclosed IPv6 address");
        out.host = authority.substr(1, close - 1);
        const std::string after = authority.substr(close + 1);
        out.port = after.empty() ? default_port : after.substr(1);
    } else {
        const auto colon = authority.rfind(':');
        out.host = authority.substr(0, colon);
        out.port = colon == std::string::npos ? default_port : authority.substr(colon + 1);
    }
    if (out.host.empty()) throw std::invalid_argument("'" + shown_url(url) + "' names no host");
    if (out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos || out.port.size() > 5)
        throw std::invalid_argument("'" + shown_url(url) + "' has no valid port");
    if (!ascii_printable(out.target) || out.target.find(' ') != std::string::npos)
        throw std::invalid_argument("'" + shown_url(url) + "' has a path a request line cannot carry");
    return out;
}

HttpClientTransport::HttpClientTransport(Options options)
    : options_(std::move(options)), url_(HttpUrl::parse(options_.url)) {
    if (url_.tls && !options_.tls) throw std::invalid_argument("an https:// URL needs a TLS connector");
}

std::unique_ptr<HttpClientTransport::Connection>
HttpClientTransport::open_connection(std::chrono::milliseconds timeout) const {
    auto connection = std::make_unique<Connection>();
    auto& stream = connection->stream;
    if (url_.tls) {
        // The tunnel carries the TLS session; the stream sees a plain socket.
        auto& tunnel = connection->tunnel;
        tunnel =
            options_.tls->connect(url_.host, std::stoi(url_.port),
                                  options_.tls_server_name.empty() ? url_.host : options_.tls_server_name, timeout);
        const int fd = tunnel->take_fd();
        beast::error_code ec;
        stream.socket().assign(tcp::v4(), fd, ec);
        if (ec) {
            ::close(fd);
            throw beast::system_error(ec);
        }
        return connection;
    }
    tcp::resolver resolver(stream.get_executor());
    const auto addresses = resolver.resolve(url_.host, url_.port);
    // Asynchronously, so the stream's deadline holds: a blocking connect
    // waits for the kernel's own give-up, minutes for an address that never answers.
    beast::error_code result;
    stream.expires_after(timeout);
    stream.async_connect(addresses, [&](const beast::error_code& ec, const tcp::endpoint&) { result = ec; });
    connection->io.run();
    connection->io.restart();
    if (result) throw beast::system_error(result);
    return connection;
}

HttpClientTransport::~HttpClientTransport() {
    close();
}

void HttpClientTransport::start(Events events) {
    events_ = std::move(events);
}

void HttpClientTransport::negotiated(const std::string& protocol_version) {
    std::lock_guard lock(mutex_);
    protocol_version_ = protocol_version;
}

bool HttpClientTransport::send(const Json& message) {
    std::string body = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    // Finished posts' threads are joined as new ones start, so they do not pile up.
    for (auto it = posts_.begin(); it != posts_.end();)
        if (it->done->load()) {
            it->thread.join();
            it = posts_.erase(it);
        } else {
            ++it;
        }
    // An answer to the server's own request (a ping, a refusal) is a POST,
    // and so a thread and a socket, of its own: a server that sends
    // requests faster than it reads the answers is answered no further once
    // kMaxAnswersInFlight wait, rather than taking a thread each.
    const bool answer = !message.contains("method");
    if (answer && answers_in_flight_ >= kMaxAnswersInFlight) {
        if (!answers_dropped_++)
            spdlog::warn("[{}] sends requests faster than it takes their answers; with {} answers waiting, the "
                         "next are dropped",
                         options_.family, kMaxAnswersInFlight);
        return true;
    }
    const auto request = request_id(message);
    if (request) requests_.try_emplace(*request);
    Post& started = posts_.emplace_back();
    try {
        started.thread = std::thread([this, done = started.done, answer, message, body = std::move(body)]() mutable {
            // What the server sends must never end the host: whatever the
            // POST's handling throws ends that POST alone.
            try {
                post(std::move(message), std::move(body));
            } catch (const std::exception& e) {
                spdlog::warn("[{}] a request to it failed unexpectedly: {}", options_.family, e.what());
            }
            if (answer) {
                std::lock_guard lock(mutex_);
                if (--answers_in_flight_ == 0) answers_dropped_ = 0;
            }
            done->store(true);
        });
    } catch (const std::system_error& e) {
        // No thread: nothing is in flight, or close() would wait for it for ever.
        posts_.pop_back();
        if (request) requests_.erase(*request);
        spdlog::warn("[{}] cannot start a thread for a request to it: {}", options_.family, e.what());
        return false;
    }
    ++in_flight_;
    if (answer) ++answers_in_flight_;
    return true;
}

void HttpClientTransport::ended(const std::string& why) {
    if (told_closed_.exchange(true)) return;
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    events_.closed(why);
}

void HttpClientTransport::give_up(std::int64_t id) {
    std::lock_guard lock(mutex_);
    auto it = requests_.find(id);
    if (it == requests_.end()) return; // its POST has ended
    it->second.given_up = true;
    // The POST's thread, reading, fails at once and ends without a word.
    if (it->second.fd >= 0) ::shutdown(it->second.fd, SHUT_RDWR);
}

bool HttpClientTransport::given_up(const Json& message) {
    const auto request = request_id(message);
    if (!request) return false;
    std::lock_guard lock(mutex_);
    auto it = requests_.find(*request);
    return it != requests_.end() && it->second.given_up;
}

// A request's refusal answers that request; nothing else can. `outage`:
// the server could not be reached as it should be (marked kRefusedHere, so
// the agent hears UPSTREAM_UNAVAILABLE), not a refusal of this request.
void HttpClientTransport::refuse(const Json& message, const std::string& why, bool outage) {
    if (message.contains("id") && !message.value("method", "").empty())
        // encode: `why` may quote what the server sent, invalid UTF-8 included.
        events_.message(protocol::encode(protocol::make_error(message["id"], protocol::error_code::internal_error, why,
                                                              outage ? Json{{kRefusedHere, true}} : Json())),
                        Json());
}

// The token for a request, or empty; false (the request refused) when the
// host has none to give.
bool HttpClientTransport::bearer_for(const Json& message, std::string& token) {
    token.clear();
    if (!options_.bearer) return true;
    try {
        token = options_.bearer->current();
    } catch (const std::exception& e) {
        spdlog::warn("[{}] {}", options_.family, e.what());
        refuse(message, e.what());
        return false;
    }
    if (ascii_printable(token)) return true;
    refuse(message, "the host's bearer token for it holds characters a header may not");
    return false;
}

// One POST, its answer delivered message by message; sent once more with a
// new token when the server refuses the one it carried and another can be had.
void HttpClientTransport::post(Json message, std::string body) {
    struct Done {
        HttpClientTransport* self;
        std::optional<std::int64_t> request;
        ~Done() {
            std::lock_guard lock(self->mutex_);
            if (request) self->requests_.erase(*request);
            --self->in_flight_;
            self->idle_.notify_all();
        }
    } done{this, request_id(message)};
    std::string token;
    if (!bearer_for(message, token)) return;
    if (post_once(message, body, token, true) == Outcome::token_refused && !given_up(message) &&
        bearer_for(message, token))
        post_once(message, body, token, false);
    if (message.value("method", "") == "notifications/initialized") start_server_stream();
}

struct HttpClientTransport::Tracked {
    HttpClientTransport& self;
    // A duplicate of the socket, registered in its stead: shutting it down
    // shuts the socket, and its number cannot be taken by another file
    // while it is registered, however the socket itself is closed meanwhile
    // (a deadline closes it within the read). -1: none could be made, and
    // the socket's own number is registered.
    int duplicate = -1;
    int fd;
    std::optional<std::int64_t> request; // the request whose answer it reads
    // false: the transport closed meanwhile, or the session gave the
    // request up, and the socket is not to be used
    bool held = false;
    Tracked(HttpClientTransport& self, int socket, std::optional<std::int64_t> request = std::nullopt)
        : self(self), duplicate(::fcntl(socket, F_DUPFD_CLOEXEC, 0)), fd(duplicate >= 0 ? duplicate : socket),
          request(request) {
        std::lock_guard lock(self.mutex_);
        if (self.closed_) return;
        if (request) {
            auto it = self.requests_.find(*request);
            if (it == self.requests_.end() || it->second.given_up) return;
            it->second.fd = fd;
        }
        self.sockets_.insert(fd);
        held = true;
    }
    ~Tracked() {
        std::lock_guard lock(self.mutex_);
        if (held) {
            self.sockets_.erase(fd);
            if (request)
                if (auto it = self.requests_.find(*request); it != self.requests_.end()) it->second.fd = -1;
        }
        if (duplicate >= 0) ::close(duplicate);
    }
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
};

// A 2025-11-25 session's GET stream, on a thread of its own that close() ends.
void HttpClientTransport::start_server_stream() {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    Post& started = posts_.emplace_back();
    try {
        started.thread = std::thread([this, done = started.done] {
            try {
                hold_server_stream();
            } catch (const std::exception& e) {
                spdlog::warn("[{}] its own stream failed unexpectedly: {}", options_.family, e.what());
            }
            std::lock_guard lock(mutex_);
            --in_flight_;
            idle_.notify_all();
            done->store(true);
        });
    } catch (const std::system_error& e) {
        posts_.pop_back();
        spdlog::warn("[{}] cannot start a thread for its own stream: {}", options_.family, e.what());
        return;
    }
    ++in_flight_;
}

// Opens the stream again whenever it ends, from the last event seen, after a
// pause that doubles while streams keep ending soon after they open.
void HttpClientTransport::hold_server_stream() {
    std::string last_event_id;
    std::chrono::seconds backoff = kFirstStreamBackoff;
    for (;;) {
        const auto opened = std::chrono::steady_clock::now();
        if (read_server_stream(last_event_id) != StreamEnd::again) return;
        if (std::chrono::steady_clock::now() - opened >= kLongestStreamBackoff) backoff = kFirstStreamBackoff;
        std::unique_lock lock(mutex_);
        if (closing_.wait_for(lock, backoff, [&] { return closed_; })) return;
        backoff = std::min(backoff * 2, std::chrono::seconds(kLongestStreamBackoff));
    }
}

HttpClientTransport::StreamEnd HttpClientTransport::read_server_stream(std::string& last_event_id) {
    std::string session_id, version;
    {
        std::lock_guard lock(mutex_);
        if (closed_) return StreamEnd::over;
        session_id = session_id_;
        version = protocol_version_;
    }
    std::string token;
    if (options_.bearer) {
        try {
            token = options_.bearer->current();
        } catch (const std::exception& e) {
            spdlog::warn("[{}] {}; its own stream waits", options_.family, e.what());
            return StreamEnd::again;
        }
        if (!ascii_printable(token)) return StreamEnd::over;
    }
    std::unique_ptr<Connection> connection;
    int fd = -1;
    try {
        connection = open_connection(options_.connect_timeout);
        auto& stream = connection->stream;
        fd = stream.socket().native_handle();
        const Tracked tracked(*this, fd);
        if (!tracked.held) return StreamEnd::over;

        auto request =
            request_to<http::empty_body>(http::verb::get, url_, "text/event-stream", token, session_id, version);
        if (!last_event_id.empty()) request.set("Last-Event-ID", last_event_id);
        stream.expires_after(options_.connect_timeout);
        auto& io = connection->io;
        run_or_throw(io, [&](auto handler) { http::async_write(stream, request, std::move(handler)); });

        beast::flat_buffer buffer(kMostUnparsedBytes);
        http::response_parser<http::buffer_body> parser;
        bound_head(parser);
        run_or_throw(io, [&](auto handler) { http::async_read_header(stream, buffer, parser, std::move(handler)); });
        const unsigned status = parser.get().result_int();
        const std::string type(parser.get()[http::field::content_type]);
        if (status == 404 && !session_id.empty()) {
            ended("it no longer knows the session (HTTP 404)");
            return StreamEnd::over;
        }
        if (status == 401 && options_.bearer &&
            options_.bearer->refused(token,
                                     BearerChallenge::parse(header_of(parser.get(), http::field::www_authenticate))))
            return StreamEnd::again;
        if (status >= 500) {
            spdlog::warn("[{}] answered the GET of its own stream with HTTP {}; asking again later", options_.family,
                         status);
            return StreamEnd::again;
        }
        if (status != 200 || type.rfind("text/event-stream", 0) != 0) {
            // 405 says the server has no stream of its own; what it sends comes within requests.
            spdlog::debug("[{}] offers no stream of its own (HTTP {})", options_.family, status);
            return StreamEnd::not_offered;
        }
        spdlog::debug("[{}] its own stream is open", options_.family);
        SseReader sse(options_.max_message_bytes, [&](std::string_view data) { events_.message(data, kServerStream); });
        while (!parser.is_done()) {
            // Quiet for hours is a healthy stream (no timeout): only close() or the server ends it.
            const bool within = read_body_part(io, stream, buffer, parser, std::nullopt,
                                               [&](std::string_view got) { return sse.feed(got); });
            last_event_id = sse.last_id();
            if (!within) {
                ended("it sent a message over " + std::to_string(options_.max_message_bytes) +
                      " bytes (limits.max_message_bytes) on its own stream");
                return StreamEnd::over;
            }
        }
        last_event_id = sse.last_id();
    } catch (const std::exception& e) {
        {
            std::lock_guard lock(mutex_);
            if (closed_) return StreamEnd::over;
        }
        spdlog::info("[{}] its own stream ended ({}); opening it again", options_.family, e.what());
    }
    return StreamEnd::again;
}

HttpClientTransport::Outcome HttpClientTransport::post_once(const Json& message, const std::string& body,
                                                            const std::string& token, bool may_renew) {
    const std::string method = message.value("method", "");
    const auto request_key = request_id(message);
    // A subscription's answer stream is quiet for as long as nothing changes.
    const bool held = method == "subscriptions/listen";
    // A request's answer is read until the session gives it up (give_up);
    // what answers a notification or an answer of the host's (202 and no
    // body, from a server that keeps to the protocol) is read no longer in
    // all than a connection is given to open.
    const std::optional<Clock::time_point> read_by =
        request_key ? std::nullopt : std::optional(Clock::now() + options_.connect_timeout);
    std::string session_id, version;
    {
        std::lock_guard lock(mutex_);
        session_id = session_id_;
        version = protocol_version_;
    }
    if (const auto meta = message.find("params"); meta != message.end() && meta->is_object())
        if (auto m = meta->find("_meta"); m != meta->end() && m->is_object())
            if (auto v = m->find("io.modelcontextprotocol/protocolVersion"); v != m->end() && v->is_string())
                version = v->get<std::string>();

    // A kept-alive connection the server closed as it was taken fails
    // before any answer: the request goes once more, on a new connection.
    for (bool retried = false;; retried = true) {
        bool reused = false, answered = false;
        std::optional<Clock::time_point> written_at, answer_seen;
        std::unique_ptr<Connection> connection;
        int fd = -1;
        try {
            connection = take_connection(reused, retried);
            auto& stream = connection->stream;
            fd = stream.socket().native_handle();
            std::optional<Tracked> tracked(std::in_place, *this, fd, request_key);
            if (!tracked->held) return Outcome::done;

            auto request = request_to<http::string_body>(http::verb::post, url_, "application/json, text/event-stream",
                                                         token, session_id, version);
            request.set(http::field::content_type, "application/json");
            if (version == "2026-07-28" && !method.empty()) set_routing_headers(request, message, method, options_);
            request.body() = body;
            request.prepare_payload();
            // The write and the answer's head by the same time as its body's reads.
            if (held)
                stream.expires_after(options_.connect_timeout);
            else
                stream.expires_at(read_by ? std::min(Clock::now() + options_.read_timeout, *read_by)
                                          : Clock::now() + options_.read_timeout);
            auto& io = connection->io;
            run_or_throw(io, [&](auto handler) { http::async_write(stream, request, std::move(handler)); });
            written_at = std::chrono::steady_clock::now();

            beast::flat_buffer buffer(kMostUnparsedBytes);
            http::response_parser<http::buffer_body> parser;
            bound_head(parser);
            run_or_throw(io,
                         [&](auto handler) { http::async_read_header(stream, buffer, parser, std::move(handler)); });
            answered = true;
            const auto& head = parser.get();
            const unsigned status = head.result_int();
            if (method == "initialize")
                if (auto sid = head.find("Mcp-Session-Id"); sid != head.end()) {
                    const std::string_view id(sid->value().data(), sid->value().size());
                    if (!id.empty() && id.size() <= 256 && ascii_printable(id)) {
                        std::lock_guard lock(mutex_);
                        session_id_ = std::string(id);
                    }
                }
            const std::string type(head[http::field::content_type]);
            const bool events = type.rfind("text/event-stream", 0) == 0;
            std::string whole; // a JSON body
            bool over = false; // a message went over the bound
            const Json stream_of = request_key ? Json(*request_key) : Json();
            SseReader sse(options_.max_message_bytes, [&](std::string_view data) {
                if (events_.message(data, stream_of) && !answer_seen) answer_seen = Clock::now();
            });
            // Until its end, or a message over the bound: each read within
            // read_timeout, all of it by read_by, and what follows the
            // answer within kAfterAnswer of it.
            // A held stream (a subscription) is read with no deadline until
            // its answer, which ends it: read on after that no longer than
            // any, or a server that answers and keeps the stream open would
            // keep its thread and socket for each subscription asked again.
            const auto until = [&]() -> std::optional<Clock::time_point> {
                if (held && !answer_seen) return std::nullopt;
                auto by = Clock::now() + options_.read_timeout;
                if (read_by) by = std::min(by, *read_by);
                if (answer_seen) by = std::min(by, *answer_seen + kAfterAnswer);
                return by;
            };
            while (!parser.is_done() && !over)
                over = !read_body_part(io, stream, buffer, parser, until(), [&](std::string_view got) {
                    if (events) return sse.feed(got);
                    whole.append(got);
                    return whole.size() <= options_.max_message_bytes;
                });
            // Given up while its body ended at the socket's end (no length, not
            // chunked): what was read may be cut short, and no one waits for it.
            if (given_up(message)) return Outcome::done;
            // A final answer read to its end, and nothing after it: the next POST may use it.
            if (!over && status >= 200 && parser.is_done() && parser.keep_alive() && buffer.size() == 0) {
                tracked.reset();
                keep_connection(std::move(connection));
            }
            if (over) {
                ended("it sent a message over " + std::to_string(options_.max_message_bytes) +
                      " bytes (limits.max_message_bytes)");
                return Outcome::done;
            }
            if (status == 404 && !session_id.empty()) {
                ended("it no longer knows the session (HTTP 404)");
                return Outcome::done;
            }
            // 401: the token (or its lack) refused; 403 insufficient_scope: a
            // token for more scope is wanted (the challenge names it).
            if ((status == 401 || status == 403) && may_renew && options_.bearer) {
                const auto challenge = BearerChallenge::parse(header_of(head, http::field::www_authenticate));
                if ((status == 401 || challenge.error == "insufficient_scope") &&
                    options_.bearer->refused(token, challenge)) {
                    spdlog::info("[{}] refused the host's {} (HTTP {}{}); sending again with a new one",
                                 options_.family, token.empty() ? "request without a token" : "access token", status,
                                 challenge.error.empty() ? "" : ", " + protocol::quoted_text(challenge.error, 64));
                    return Outcome::token_refused;
                }
            }
            if (status == 202 || (status >= 200 && status < 300 && whole.empty() && !events)) return Outcome::done;
            if (status >= 300) {
                // Busy, or a gateway in front of it that could not reach it:
                // an outage to wait out. Any other status is its answer.
                const bool outage = status == 429 || status == 502 || status == 503 || status == 504;
                refuse(message,
                       "the server answered HTTP " + std::to_string(status) +
                           (whole.empty() ? "" : ": " + protocol::quoted_text(whole, 200)),
                       outage);
                return Outcome::done;
            }
            if (!events) events_.message(whole, stream_of);
            // The subscription's stream ended without its answer: the session asks again.
            if (held && events) refuse(message, "its subscription stream ended");
        } catch (const beast::system_error& e) {
            {
                std::lock_guard lock(mutex_);
                if (closed_) return Outcome::done; // close() cut it short
            }
            if (given_up(message)) return Outcome::done; // give_up() cut it short
            if (!retried && closed_before_answering(reused, answered, written_at, e.code())) continue;
            // A stream read past its time ends alone: the request it carried
            // times out in the session (or was answered), and the connection stays.
            if (e.code() == beast::error::timeout && fd >= 0) {
                if (answer_seen)
                    spdlog::info("[{}] kept an answer stream open past its answer; the host stopped reading it",
                                 options_.family);
                else if (read_by && Clock::now() >= *read_by)
                    spdlog::warn("[{}] answered a message of the host's for over {} ms; the host stopped reading it",
                                 options_.family, options_.connect_timeout.count());
                else
                    spdlog::warn("[{}] an answer stream went quiet for {} ms; the host stopped reading it",
                                 options_.family, options_.read_timeout.count());
                return Outcome::done;
            }
            // Over TLS the socket only ends; the tunnel knows why.
            const auto* tunnel = connection ? connection->tunnel.get() : nullptr;
            const std::string why = tunnel && !tunnel->failure().empty() ? tunnel->failure() : e.code().message();
            ended("it could not be reached at " + shown_url(options_.url) + " (" + why + ")");
        } catch (const std::exception& e) {
            {
                std::lock_guard lock(mutex_);
                if (closed_) return Outcome::done; // close() cut it short
            }
            if (given_up(message)) return Outcome::done;
            ended("it could not be reached at " + shown_url(options_.url) + " (" + e.what() + ")");
        }
        return Outcome::done;
    }
}

// A kept connection the server closed as this request went out: the
// connection ended (no timeout, no other error) before any answer, within
// a second of the write. A server does not close on a request it has taken
// without answering it, so sending it again on a new connection runs it
// once; anything else might have run, and is not sent again.
bool HttpClientTransport::closed_before_answering(bool reused, bool answered,
                                                  std::optional<std::chrono::steady_clock::time_point> written_at,
                                                  const beast::error_code& ec) {
    if (!reused || answered) return false;
    const bool ended = ec == http::error::end_of_stream || ec == asio::error::eof ||
                       ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
    return ended && (!written_at || std::chrono::steady_clock::now() - *written_at < std::chrono::seconds(1));
}

std::unique_ptr<HttpClientTransport::Connection> HttpClientTransport::take_connection(bool& reused, bool fresh) {
    std::vector<std::unique_ptr<Connection>> stale; // closed outside the lock (a tunnel joins its thread)
    std::unique_ptr<Connection> found;
    {
        std::lock_guard lock(mutex_);
        while (!fresh && !kept_.empty() && !found) {
            auto connection = std::move(kept_.back());
            kept_.pop_back();
            // Still open: nothing to read, not even the end the server's close leaves.
            char byte;
            const bool open =
                std::chrono::steady_clock::now() - connection->idle_since < kIdleReuse &&
                ::recv(connection->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
                (errno == EAGAIN || errno == EWOULDBLOCK);
            if (open)
                found = std::move(connection);
            else
                stale.push_back(std::move(connection));
        }
    }
    stale.clear();
    reused = found != nullptr;
    if (found) return found;
    return open_connection(options_.connect_timeout);
}

void HttpClientTransport::keep_connection(std::unique_ptr<Connection> connection) {
    std::unique_ptr<Connection> dropped;
    std::lock_guard lock(mutex_);
    if (closed_) {
        dropped = std::move(connection);
        return;
    }
    connection->idle_since = std::chrono::steady_clock::now();
    kept_.push_back(std::move(connection));
    if (kept_.size() > kMaxIdle) {
        dropped = std::move(kept_.front());
        kept_.erase(kept_.begin());
    }
}

void HttpClientTransport::delete_session() {
    std::string session_id, version;
    {
        std::lock_guard lock(mutex_);
        session_id = session_id_;
        version = protocol_version_;
    }
    if (session_id.empty()) return;
    try {
        constexpr std::chrono::seconds kGoodbye{2};
        const auto connection = open_connection(kGoodbye);
        auto& stream = connection->stream;
        std::string token = options_.bearer ? options_.bearer->current() : std::string();
        if (!ascii_printable(token)) token.clear();
        auto request =
            request_to<http::empty_body>(http::verb::delete_, url_, "application/json", token, session_id, version);
        // Both within the same 2 s: a server that holds the DELETE open
        // holds the transport's close no longer.
        stream.expires_after(kGoodbye);
        auto& io = connection->io;
        run_or_throw(io, [&](auto handler) { http::async_write(stream, request, std::move(handler)); });
        beast::flat_buffer buffer(kMostUnparsedBytes);
        http::response_parser<http::string_body> response;
        response.body_limit(64 * 1024);
        run_or_throw(io, [&](auto handler) { http::async_read(stream, buffer, response, std::move(handler)); });
    } catch (const std::exception&) {
        // The server may be gone; its session goes with it.
    }
}

void HttpClientTransport::close() {
    // Whole, one caller at a time: a retiring family and its supervisor's
    // failed connect may both close, and the posts are joined once.
    std::lock_guard one_at_a_time(close_mutex_);
    std::vector<std::unique_ptr<Connection>> idle; // closed outside the lock
    {
        std::unique_lock lock(mutex_);
        if (closed_ && posts_.empty()) {
            lock.unlock();
            ended("closed");
            return;
        }
        closed_ = true;
        closing_.notify_all();
        idle.swap(kept_);
        // Posts still reading (a request the session gave up on) end now.
        for (int fd : sockets_)
            ::shutdown(fd, SHUT_RDWR);
        idle_.wait(lock, [&] { return in_flight_ == 0; });
    }
    for (auto& p : posts_)
        if (p.thread.joinable()) p.thread.join();
    posts_.clear();
    delete_session();
    ended("closed");
}

} // namespace gatehouse::upstream
