#include "transport/http_connection.hpp"

#include "gate/refusal.hpp"
#include "protocol/ascii_case.hpp"
#include "protocol/revision.hpp"
#include "protocol/tool_call.hpp"
#include "state/notification_bus.hpp"
#include "transport/http_framing.hpp"
#include "transport/http_media_types.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/beast/http/status.hpp>
#include <spdlog/spdlog.h>

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <mutex>
#include <vector>
#include <string_view>
#include <utility>

namespace gatehouse::transport {

// Keys looked up by length, not measured with strlen at every member compared.
using namespace std::string_view_literals;

namespace net = boost::asio;
namespace http = boost::beast::http;
using protocol::Json;

namespace {

// A queue this large means the peer stopped reading; it is dropped.
constexpr std::size_t kMaxQueuedBytes = 16 * 1024 * 1024;
// Requests pipelined behind an answer are parsed only while what waits to
// be written is under this: a client that sends and does not read holds
// this and one answer, not an answer per request it sent, and one that
// reads gets its large answers one after another, not dropped at the bound.
constexpr std::size_t kMostQueuedBeforeParsing = 64 * 1024;

// After its last answer a closing connection reads and drops what the
// client still sends, this much at most, and closes after this long (once
// its answers have left the kernel: HttpConnection::unsent_bytes).
constexpr std::uint64_t kLingerMs = 2000;
// While a lingering connection's answers still leave, how often it looks.
constexpr std::uint64_t kUnsentPollMs = 200;
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;

// The revision params._meta names, if it names one (of any type: a
// malformed one is the protocol layer's to refuse).
const Json* named_revision(const Json& message) {
    const auto params = message.find("params"sv);
    if (params == message.end() || !params->is_object()) return nullptr;
    const auto meta = params->find("_meta"sv);
    if (meta == params->end() || !meta->is_object()) return nullptr;
    const auto version = meta->find(protocol::meta_key::protocol_version);
    return version != meta->end() ? &*version : nullptr;
}

// Whether a named revision is of the stateless era (not 2025-11-25, which a
// confused client may put there inside its session).
bool stateless_revision(const Json& version) {
    return !version.is_string() || version.get_ref<const std::string&>() != protocol::kLegacyVersion;
}

// The value of the first field named `name`, as the request sent it. A
// request holds a handful of fields: a scan in the order they came, most
// ruled out by their length, costs less than Beast's search of its tree,
// which folds the case of every name it passes (some twenty lookups a
// request). The fields are bounded by kMaxHeaderBytes, so even a request
// of thousands of tiny fields costs its scans less than their parse.
std::optional<std::string_view> header_value(const HttpConnection::Request& request, std::string_view name) {
    for (const auto& field : request) {
        const auto sent = field.name_string();
        if (sent.size() == name.size() &&
            protocol::equals_ignoring_ascii_case(std::string_view(sent.data(), sent.size()), name))
            return std::string_view(field.value().data(), field.value().size());
    }
    return std::nullopt;
}

// The same for a field Beast knows by number: a scan comparing numbers.
std::optional<std::string_view> header_value(const HttpConnection::Request& request, http::field name) {
    for (const auto& field : request)
        if (field.name() == name) return std::string_view(field.value().data(), field.value().size());
    return std::nullopt;
}

// The HTTP status a JSON-RPC error travels with. 2026-07-28 names 400 for
// header, version and capability errors and 404 for an unknown method; the
// 2025-11-25 transport keeps 200 for everything but malformed messages (a 404
// there would tell the client its session is gone).
int status_for_error(int code, bool modern) {
    namespace ec = protocol::error_code;
    switch (code) {
    case ec::parse_error:
    case ec::invalid_request: return 400;
    case ec::header_mismatch:
    case ec::missing_required_client_capability:
    case ec::unsupported_protocol_version: return modern ? 400 : 200;
    case ec::method_not_found: return modern ? 404 : 200;
    default: return 200;
    }
}

// One POST's answers: notifications first (turning the answer into an SSE
// stream), then the response. Called from any thread.
class HttpReply final : public protocol::Outbound {
public:
    HttpReply(std::weak_ptr<HttpConnection> connection, std::uint64_t exchange, bool modern)
        : connection_(std::move(connection)), exchange_(exchange), modern_(modern) {}

    void send(const Json& message) override {
        auto connection = connection_.lock();
        if (!connection) return;
        const bool final = !message.contains("method"sv);
        int status = 200;
        std::string headers;
        if (final) answer_status(message, status, headers);
        connection->deliver(exchange_, protocol::encode(message), final, status, std::move(headers));
    }

    void reject(const Json& message) override {
        auto connection = connection_.lock();
        if (!connection) return;
        // Malformed for 2026-07-28 (its _meta, params or revision) is 400;
        // the 2025-11-25 transport keeps 200 for what is not a broken message.
        int status = 200;
        std::string headers;
        answer_status(message, status, headers);
        if (modern_) status = std::max(status, 400);
        connection->deliver(exchange_, protocol::encode(message), true, status, std::move(headers));
    }

    void ended_without_answer() override {
        if (auto connection = connection_.lock()) connection->deliver_end(exchange_);
    }

private:
    // The status and headers a final answer travels with. A request refused
    // as a whole because its caller has too many in flight is 429; a tool
    // call refused by the rate limit stays a 200 tool result (the agent reads
    // the refusal) and says when to retry in Retry-After as well.
    // Every member is read with its type checked: a result is a plugin's or
    // an upstream server's words, and `value()` throws on a member of
    // another type (`"code": 404`), which here would end the process.
    void answer_status(const Json& message, int& status, std::string& headers) const {
        if (auto error = message.find("error"sv); error != message.end() && error->is_object()) {
            const auto code = error->find("code"sv);
            const bool numbered = code != error->end() && code->is_number_integer();
            status = status_for_error(
                numbered ? static_cast<int>(std::clamp<std::int64_t>(code->get<std::int64_t>(), INT_MIN, INT_MAX)) : 0,
                modern_);
            const auto data = error->find("data"sv);
            if (data != error->end() &&
                protocol::text_member(*data, "code") == gate::refusal_code::too_many_in_flight) {
                status = 429;
                headers = "Retry-After: 1\r\n";
            }
            return;
        }
        const auto result = message.find("result"sv);
        if (result == message.end() || !result->is_object()) return;
        const auto is_error = result->find("isError"sv);
        if (is_error == result->end() || *is_error != true) return;
        const auto refusal = result->find("structuredContent"sv);
        if (refusal == result->end() || protocol::text_member(*refusal, "code") != gate::refusal_code::rate_limited)
            return;
        const auto next = refusal->find("next"sv);
        if (next == refusal->end() || !next->is_object()) return;
        const auto ms = next->find("retryAfterMs"sv);
        if (ms == next->end() || !ms->is_number_unsigned()) return;
        headers = "Retry-After: " + std::to_string((ms->get<std::uint64_t>() + 999) / 1000) + "\r\n";
    }

    std::weak_ptr<HttpConnection> connection_;
    std::uint64_t exchange_;
    bool modern_;
};

// A 2025-11-25 session's own channel: the GET streams the client holds open.
// What the host sends outside any request (resource updates) goes to one of
// them, the newest (the transport sends each message on one stream only), and
// is dropped while none is open. Every stream is held until it ends or the
// session does.
class SessionStream final : public protocol::Outbound {
public:
    // False when the session has ended already (between its lookup and
    // now): a stream attached then would never be ended.
    bool attach(std::weak_ptr<HttpConnection> connection, std::uint64_t exchange) {
        std::lock_guard lock(mutex_);
        if (closed_) return false;
        std::erase_if(streams_, [](const Stream& s) { return s.connection.expired(); });
        streams_.push_back({std::move(connection), exchange});
        return true;
    }

    // The stream `exchange` of `connection` ended on its own.
    void detach(const HttpConnection* connection, std::uint64_t exchange) {
        std::lock_guard lock(mutex_);
        std::erase_if(streams_, [&](const Stream& s) {
            const auto held = s.connection.lock();
            return !held || (held.get() == connection && s.exchange == exchange);
        });
    }

    void send(const Json& message) override {
        std::shared_ptr<HttpConnection> target;
        std::uint64_t exchange = 0;
        {
            std::lock_guard lock(mutex_);
            for (auto it = streams_.rbegin(); it != streams_.rend() && !target; ++it) {
                target = it->connection.lock();
                exchange = it->exchange;
            }
        }
        if (target) target->deliver(exchange, protocol::encode(message), false, 200);
    }

    // The session ended: every GET stream of it ends with it, so the client
    // sees them close instead of waiting on a session that is gone, and
    // their stream slots are free again.
    void close() override {
        std::vector<Stream> ending;
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
            ending.swap(streams_);
        }
        for (const auto& stream : ending)
            if (auto connection = stream.connection.lock()) connection->deliver_end(stream.exchange);
    }

private:
    struct Stream {
        std::weak_ptr<HttpConnection> connection;
        std::uint64_t exchange = 0;
    };
    std::mutex mutex_;
    std::vector<Stream> streams_;
    bool closed_ = false;
};

// Where a notification POST's answers go: nowhere (the client gets 202).
class DiscardingOutbound final : public protocol::Outbound {
public:
    void send(const Json&) override {}
};

// What a POST that is no request gets back from the protocol layer: nothing
// for a notification or a response, an error for a message that is neither.
// handle() answers such a message before it returns.
class RefusalCapture final : public protocol::Outbound {
public:
    void send(const Json& message) override {
        if (!error && message.contains("error"sv)) error = message;
    }
    std::optional<Json> error;
};

std::string chunk(std::string_view payload) {
    char size[32];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
    std::string out;
    out.reserve(payload.size() + static_cast<std::size_t>(n) + 2);
    out.append(size, static_cast<std::size_t>(n));
    out.append(payload);
    out.append("\r\n");
    return out;
}

std::string sse_event(std::string_view json) {
    std::string event;
    event.reserve(json.size() + 24);
    event.append("event: message\ndata: ");
    event.append(json);
    event.append("\n\n");
    return chunk(event);
}

// The reason label of gatehouse_auth_failures_total.
std::string_view auth_failure_reason(auth::TokenVerdict::Kind kind) {
    using Kind = auth::TokenVerdict::Kind;
    switch (kind) {
    case Kind::missing: return "missing";
    case Kind::malformed: return "malformed";
    case Kind::unavailable: return "unavailable";
    case Kind::throttled: return "throttled";
    default: return "rejected";
    }
}

// The status line, and the instance's name when http.instance_name is set.
// An answer's head as far as its own headers: the status line and the
// instance's header, in one string sized for `more` bytes of headers after
// them, so the head is built with one allocation.
std::string status_line(int status, const std::string& instance_header, std::size_t more = 96) {
    const auto reason = http::obsolete_reason(static_cast<http::status>(status));
    std::string out;
    out.reserve(16 + reason.size() + instance_header.size() + more);
    out += "HTTP/1.1 ";
    out += std::to_string(status);
    out += ' ';
    out.append(reason.data(), reason.size());
    out += "\r\n";
    out += instance_header;
    return out;
}

} // namespace

namespace {

// A 2025-11-25 session's id that names no session this caller holds.
constexpr const char* kSessionNotFound = "Session not found: it ended, expired or never existed; initialize again.";

// A request's method, target and header fields without its body: what is
// kept of it while its body, already read, is handled elsewhere.
HttpConnection::Request headers_of(const HttpConnection::Request& request) {
    HttpConnection::Request headers;
    headers.base() = request.base();
    return headers;
}

} // namespace

std::shared_ptr<protocol::Connection> make_legacy_connection(const auth::Principal& owner) {
    // Identity only: should anything read the connection's principal to
    // authorise, it finds no scope, and refuses rather than lending a
    // request the token that opened the session.
    auth::Principal identity;
    identity.subject = owner.subject;
    identity.kind = owner.kind;
    identity.issuer = owner.issuer;
    auto connection = std::make_shared<protocol::Connection>(std::make_shared<SessionStream>(), std::move(identity));
    connection->transport = "http";
    return connection;
}

HttpConnection::HttpConnection(Socket socket, HttpService& service)
    : socket_(std::move(socket)), service_(service), timer_(socket_.get_executor()), buffer_(kMaxHeaderBytes) {
    ++service_.connections;
}

HttpConnection::~HttpConnection() {
    release_exchange();
    finishing(false);
    --service_.connections;
}

// Counted among the connections the drain waits for while it has answers
// not yet written whole, and while it lingers after its last: an answer is
// queued (its request no longer counted) before it is written, and a
// connection closed with a client's bytes unread is reset, which can throw
// away what the client has not yet read.
void HttpConnection::finishing(bool finishing) {
    if (finishing == finishing_) return;
    finishing_ = finishing;
    if (finishing)
        ++service_.finishing;
    else
        --service_.finishing;
}

void HttpConnection::start() {
    // The read after a wait (wait_for_bytes) must not block: a wake-up for
    // nothing is then a would_block, not a stalled loop.
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    if (ec) {
        spdlog::warn("http: a connection could not be made non-blocking ({}); closed", ec.message());
        net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
        return;
    }
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->wait_for_bytes(); });
}

void HttpConnection::drain() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
        self->drained_ = true;
        // Idle connections, one whose next request is still arriving (the
        // drain ends what has not begun), and long-lived streams (which count
        // as no request) close now, gracefully: an answer still being written
        // (one the drain itself produced, such as a subscription's final
        // result), or written but still in the kernel for a slow reader, goes
        // out first, and bytes left unread cannot turn the close into a reset
        // that loses it. Left as it was, a connection reading a request counts
        // as nothing the drain waits for, and was reset at its end. A request
        // being answered finishes first.
        if (self->phase_ == Phase::waiting_for_request || self->phase_ == Phase::reading_request ||
            (self->phase_ == Phase::streaming && !self->counted_))
            self->close_gracefully();
        --self->service_.drains_pending;
    });
}

void HttpConnection::abort() {
    net::post(socket_.get_executor(), [self = shared_from_this()] { self->peer_gone(); });
}

// ---------------------------------------------------------------- reading

// One read at a time is pending on the socket, whatever the phase: bytes it
// brings are parsed when a request is due, and wait in the buffer while one
// is answered. The buffer holds at most kMaxHeaderBytes, so framing that
// never ends (a chunk line, trailers) cannot grow it.
//
// The read waits for the socket to be readable and only then takes room in
// the buffer and reads (a non-blocking read_some): while it waits, requests
// pipelined behind the one answered are parsed out of the buffer, which may
// then start over from its beginning (flat_buffer::consume). A read given
// its room before it waited (async_read_some) would write behind that new
// beginning, and the next request would be read from the bytes of an old
// one. Asio registers the wait with epoll_ctl (EPOLL_CTL_MOD, which reports
// a socket already readable at once), where async_read_some first tried a
// read that found nothing: one system call a request either way.
void HttpConnection::wait_for_bytes() {
    if (phase_ == Phase::closed || reading_) return;
    // Full while an answer is pending: pipelined requests wait there, and
    // reading resumes once they are handled.
    if (buffer_.size() == buffer_.max_size()) return;
    // A connection that has not sent a whole request yet gets the time one
    // request's bytes get, not a keep-alive's wait: silent connections would
    // otherwise hold every place (max_connections) for the idle timeout.
    if (phase_ == Phase::waiting_for_request)
        arm_timer(heard_a_request_ ? service_.settings.idle_timeout_ms : service_.settings.request_timeout_ms);
    reading_ = true;
    socket_.async_wait(Socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        self->reading_ = false;
        if (self->phase_ == Phase::closed) return;
        std::size_t n = 0;
        if (!ec)
            n = self->socket_.read_some(self->buffer_.prepare(self->buffer_.max_size() - self->buffer_.size()), ec);
        // Readable with nothing to read (a wake-up for nothing): wait again.
        if (ec == boost::asio::error::would_block) {
            self->wait_for_bytes();
            return;
        }
        {
            struct InReadHandler { // cleared however on_bytes ends
                HttpConnection& connection;
                ~InReadHandler() { connection.in_read_handler_ = false; }
            } inside{*self};
            self->in_read_handler_ = true;
            self->on_bytes(ec, n);
        }
        // Now, ahead of the handlers the loop has queued, where a post would
        // have run it behind them; any call it leads to (the next pipelined
        // request, parsed once its answer is written) is posted as before.
        if (auto call = std::exchange(self->call_after_read_, nullptr)) call();
    });
}

void HttpConnection::on_bytes(boost::system::error_code ec, std::size_t n) {
    if (phase_ == Phase::closed) return;
    if (ec || n == 0) {
        // While a request is answered, the peer closing is its cancellation.
        if (phase_ == Phase::answering || phase_ == Phase::streaming)
            peer_gone();
        else
            close();
        return;
    }
    buffer_.commit(n);
    switch (phase_) {
    case Phase::waiting_for_request:
    case Phase::reading_request: parse_request(); return;
    case Phase::lingering:
        // Past the bound the socket is no longer read: the client's
        // writes stall rather than meet a reset that could destroy
        // the answer unread, and the timer closes it.
        lingered_bytes_ += n;
        buffer_.consume(buffer_.size());
        if (lingered_bytes_ <= kMaxLingerBytes) wait_for_bytes();
        return;
    default:
        // Bytes that arrive while an answer is pending are the next
        // (pipelined) request; they wait in the buffer until it is done,
        // and the socket stays watched for the peer closing.
        wait_for_bytes();
        return;
    }
}

void HttpConnection::parse_request() {
    if (phase_ == Phase::waiting_for_request) {
        phase_ = Phase::reading_request;
        parser_.emplace();
        parser_->body_limit(service_.limits.max_message_bytes);
        parser_->header_limit(kMaxHeaderBytes);
        // Not eager until the header section is read: put() then stops right
        // after it, and the bytes it took are the section's size.
        parser_->eager(false);
        parser_->on_chunk_header(chunk_budget_);
        request_bytes_ = 0;
        header_bytes_ = 0;
        arm_timer(service_.settings.request_timeout_ms);
    }
    boost::beast::error_code ec;
    while (buffer_.size() > 0) {
        const std::size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        request_bytes_ += used;
        if (ec == http::error::need_more) break;
        if (ec) {
            refuse_framing(ec);
            return;
        }
        if (header_bytes_ == 0 && parser_->is_header_done()) {
            header_bytes_ = request_bytes_;
            if (!on_header_section()) return;
        }
        if (parser_->is_done()) {
            disarm_timer();
            heard_a_request_ = true;
            if (parser_->chunked() && !discard_trailer_fields()) return;
            on_request(parser_->release());
            return;
        }
        if (used == 0) break;
    }
    // What is buffered is not a whole request, and no more fits: a chunk
    // line or trailer section that does not end within the bound.
    if (buffer_.size() == buffer_.max_size()) {
        refuse_framing(http::error::header_limit);
        return;
    }
    wait_for_bytes();
}

// Refusals the header section earns before its body is read; after any of
// them the body's bytes cannot be told from the next request's, so the
// connection closes.
bool HttpConnection::on_header_section() {
    const auto& header = parser_->get();
    auto refusal = refuse_transfer_encoding(header);
    if (!refusal) refusal = refuse_repeated_header(header);
    if (refusal) {
        keep_alive_ = false;
        disarm_timer();
        respond_error(refusal->status, nullptr, protocol::error_code::invalid_request, refusal->message);
        return false;
    }
    if (parser_->chunked()) {
        header_fields_ = static_cast<std::size_t>(std::distance(header.begin(), header.end()));
        chunk_budget_.left = kMaxHeaderBytes > header_bytes_ ? kMaxHeaderBytes - header_bytes_ : 0;
    }
    // A client that waits for leave to send its body (Expect: 100-continue,
    // curl's way with a large one) gets it now, not after its own wait
    // (curl's is 1 s); the answer follows the body as usual (RFC 9110 §10.1.1).
    if (header.version() >= 11 && !parser_->is_done())
        if (const auto expect = header_value(header, http::field::expect);
            expect && protocol::equals_ignoring_ascii_case(*expect, "100-continue"))
            write(std::string("HTTP/1.1 100 Continue\r\n\r\n"));
    parser_->eager(true);
    return true;
}

void HttpConnection::ChunkExtensionBudget::operator()(std::uint64_t, boost::beast::string_view extensions,
                                                      boost::beast::error_code& ec) {
    if (extensions.size() > left) {
        ec = http::error::header_limit;
        return;
    }
    left -= extensions.size();
}

// Trailer fields land among the header fields in Beast's message; the host
// takes none (RFC 9110 §6.5.1 lets a recipient discard them), so a trailer
// can never stand in for a header the request did not send. They count
// against the header bound all the same.
bool HttpConnection::discard_trailer_fields() {
    auto& message = parser_->get();
    auto it = message.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(header_fields_));
    std::size_t trailer_bytes = 0;
    for (auto t = it; t != message.end(); ++t)
        trailer_bytes += field_bytes(*t);
    if (trailer_bytes > chunk_budget_.left) {
        refuse_framing(http::error::header_limit);
        return false;
    }
    while (it != message.end())
        it = message.erase(it);
    return true;
}

void HttpConnection::refuse_framing(boost::beast::error_code ec) {
    // After a framing error the next request's first byte is unknown.
    keep_alive_ = false;
    disarm_timer();
    if (ec == http::error::body_limit) {
        respond_error(413, nullptr, protocol::error_code::invalid_request,
                      "The request body is larger than " + std::to_string(service_.limits.max_message_bytes) +
                          " bytes, this server's limit.");
        return;
    }
    if (ec == http::error::header_limit) {
        const bool in_body = parser_ && parser_->is_header_done();
        respond_status(431, in_body
                                ? "The request's header section, chunk extensions and trailer fields together are "
                                  "larger than " +
                                      std::to_string(kMaxHeaderBytes) + " bytes."
                                : "The request headers are larger than " + std::to_string(kMaxHeaderBytes) + " bytes.");
        return;
    }
    respond_status(400, "Malformed HTTP request: " + ec.message());
}
// The connection's one deadline (idle, request, keep-alive comment, linger)
// moves on every request; the timer behind it does not. A wait already
// pending that ends no later than the new deadline stays, and when it ends
// early it waits again for the rest: a steady run of requests re-arms the
// timer about once per deadline's length, not several times per request
// (each re-arm a cancelled handler to run, and often a timerfd_settime).
void HttpConnection::arm_timer(std::uint64_t ms) {
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    if (timer_waiting_ && timer_.expiry() <= *deadline_) return;
    wait_for_deadline();
}

void HttpConnection::disarm_timer() {
    deadline_.reset();
}

void HttpConnection::wait_for_deadline() {
    timer_.expires_at(*deadline_); // a pending later wait ends as superseded
    timer_waiting_ = true;
    const std::uint64_t wait = ++timer_wait_;
    timer_.async_wait([self = shared_from_this(), wait](boost::system::error_code ec) {
        if (wait != self->timer_wait_) return; // superseded by a wait for an earlier deadline
        self->timer_waiting_ = false;
        if (ec || self->phase_ == Phase::closed || !self->deadline_) return;
        if (std::chrono::steady_clock::now() < *self->deadline_) {
            self->wait_for_deadline(); // the deadline moved on since this wait began
            return;
        }
        self->deadline_.reset();
        switch (self->phase_) {
        case Phase::waiting_for_request:
        case Phase::reading_request:
        case Phase::lingering:
            // What was written may still wait in the kernel for a reader
            // that takes it slowly, and a close with the client's bytes
            // unread is a reset, which throws away what was not yet sent:
            // the linger goes on while it leaves, within the idle time.
            if (self->unsent_bytes() > 0 && std::chrono::steady_clock::now() - self->linger_began_ <
                                                std::chrono::milliseconds(self->service_.settings.idle_timeout_ms)) {
                self->arm_timer(kUnsentPollMs);
                break;
            }
            self->close();
            break;
        case Phase::streaming:
            // A comment line keeps proxies and clients from timing out a quiet stream.
            self->write(chunk(":\n\n"));
            if (self->phase_ != Phase::closed) self->arm_timer(self->service_.settings.keepalive_ms);
            break;
        default: break;
        }
    });
}

// ---------------------------------------------------------------- routing

void HttpConnection::on_request(Request request) {
    // A new request leaves the exchange before it behind at once: a message
    // of that one delivered late (a 2025-11-25 session's stream that ended
    // as it was sent) is dropped, even while this request is authenticated
    // or its session looked up, when the phase already reads answering.
    // The reply this request makes is for the number after (begin_exchange).
    ++exchange_;
    keep_alive_ = request.keep_alive();
    const std::string_view target(request.target().data(), request.target().size());
    const std::string_view path = target.substr(0, target.find('?'));

    // An answer to HEAD carries no body (RFC 9110, 9.3.2): a proxy that keeps
    // the connection would read one as the next answer. Nothing here is read
    // with HEAD, so it is refused with an empty body.
    if (request.method() == http::verb::head) {
        respond_status(405, "", "Allow: GET, POST, DELETE\r\n");
        return;
    }
    if (path == "/health" && request.method() == http::verb::get) {
        const bool draining = service_.draining.load();
        respond_json(draining ? 503 : 200, draining ? R"({"status":"draining"})" : R"({"status":"ok"})");
        return;
    }
    if (path == "/ready" && request.method() == http::verb::get) {
        // Whether requests can be served now: the process is up (/health)
        // and what they need (the state backend, the bus) answers.
        // Anyone may ask, before any check: the reason says which part does
        // not answer, not its details (the Redis address, its error); those
        // are on the operators' listener (metrics.listen: /ready, /status).
        const auto answer = [this](std::optional<std::string> problem) {
            if (problem) problem = problem->substr(0, problem->find(':'));
            respond_json(problem ? 503 : 200,
                         problem ? Json{{"status", "unavailable"}, {"reason", *problem}}.dump()
                                 : R"({"status":"ready"})",
                         problem ? "Retry-After: 1\r\n" : "");
        };
        if (service_.draining) {
            answer("draining");
            return;
        }
        if (!service_.legacy_sessions.shared()) {
            answer(service_.readiness());
            return;
        }
        // The probe asks Redis, which may be slow to answer: never on this
        // loop, and one probe at a time however many ask (anyone may).
        leave_loop();
        service_.probe_readiness([self = shared_from_this(), answer](std::optional<std::string> problem) {
            self->resume_on_loop([self, answer, problem] {
                answer(self->service_.draining ? std::optional<std::string>("draining") : problem);
            });
        });
        return;
    }
    const std::string_view host = header_value(request, http::field::host).value_or(std::string_view());
    if (!service_.access.host_allowed(host)) {
        respond_error(403, nullptr, protocol::error_code::invalid_request,
                      "Host header '" + std::string(host) +
                          "' is not one this server answers to (http.allowed_hosts in its configuration).");
        return;
    }
    if (is_metrics_path(path)) {
        if (request.method() != http::verb::get) {
            respond_status(405, "Metrics are read with GET.", "Allow: GET\r\n");
            return;
        }
        // Its own allow-list, when set, decides alone; else a scrape is
        // authenticated like any request when auth: is on.
        if (!service_.metrics_allow.empty()) {
            boost::system::error_code no_peer;
            const auto peer = socket_.remote_endpoint(no_peer);
            if (no_peer || !service_.metrics_allow.allows(peer.address())) {
                respond_status(403, "This address may not read the metrics (metrics.allow in the configuration).");
                return;
            }
            respond_metrics();
            return;
        }
        if (service_.authenticator.enabled()) {
            authenticate(std::move(request));
            return;
        }
        respond_metrics();
        return;
    }
    // A page checks its own Origin (its form posts from itself, wherever the
    // host is reached), so allowed_origins, which is about MCP callers, does
    // not apply.
    auto pages = is_page_path(path) ? service_.registry.current() : nullptr; // kept while the page runs
    if (pages && pages->offers_pages()) {
        serve_page_away(std::move(request), std::move(pages), path.size());
        return;
    }
    if (const auto origin = header_value(request, http::field::origin)) {
        const std::string_view value = *origin;
        if (!service_.access.origin_allowed(value)) {
            respond_error(403, nullptr, protocol::error_code::invalid_request,
                          "Origin '" + std::string(value) +
                              "' may not call this server (http.allowed_origins in its configuration).");
            return;
        }
    }
    if (service_.authenticator.is_metadata_path(path)) {
        if (request.method() != http::verb::get) {
            respond_status(405, "Protected resource metadata is read with GET.", "Allow: GET\r\n");
            return;
        }
        respond_json(200, service_.authenticator.metadata_json(), "Cache-Control: max-age=300\r\n");
        return;
    }
    if (path != service_.settings.path) {
        respond_status(404, "No MCP endpoint here; it is at " + service_.settings.path + ".");
        return;
    }
    if (service_.draining || drained_) {
        keep_alive_ = false;
        respond_error(503, nullptr, protocol::error_code::internal_error,
                      "The server is shutting down; retry against another instance.", "Retry-After: 1\r\n");
        return;
    }
    if (service_.authenticator.enabled()) {
        authenticate(std::move(request));
        return;
    }
    principal_ = service_.principal;
    on_authenticated(request);
}

// The bearer token decides who calls. Its check may wait on an
// authorization server (a key re-read, an introspection); meanwhile this
// connection reads nothing more, and other connections are not held up.
void HttpConnection::authenticate(Request request) {
    phase_ = Phase::answering;
    auto held = std::make_shared<Request>(std::move(request));
    const auto authorization = header_value(*held, "Authorization");
    const auto count = static_cast<std::size_t>(std::distance(held->equal_range(http::field::authorization).first,
                                                              held->equal_range(http::field::authorization).second));
    const std::string_view target(held->target().data(), held->target().size());
    boost::system::error_code no_peer;
    const auto peer = socket_.remote_endpoint(no_peer);
    const std::string client_address = no_peer ? std::string() : peer.address().to_string();
    service_.authenticator.authenticate(
        authorization, count, target, client_address,
        [self = shared_from_this(), held](auth::TokenVerdict verdict) mutable {
            auto executor = self->socket_.get_executor();
            net::dispatch(executor, [self = std::move(self), held = std::move(held),
                                     verdict = std::move(verdict)]() mutable {
                if (self->phase_ == Phase::closed) return;
                using Kind = auth::TokenVerdict::Kind;
                if (auto* observability = self->service_.server.observability();
                    observability && verdict.kind != Kind::accepted)
                    observability->auth_failure(auth_failure_reason(verdict.kind));
                switch (verdict.kind) {
                case Kind::accepted:
                    self->principal_ = std::move(verdict.principal);
                    self->on_authenticated(*held);
                    return;
                case Kind::unavailable:
                    self->respond_error(503, nullptr, protocol::error_code::internal_error,
                                        "The access token cannot be checked now (" + verdict.reason +
                                            "); retry shortly.",
                                        "Retry-After: 5\r\n");
                    return;
                case Kind::throttled:
                    self->respond_error(429, nullptr, protocol::error_code::invalid_request,
                                        "The access token was not checked: " + verdict.reason + "; retry in " +
                                            std::to_string(verdict.retry_after_s) + " s.",
                                        "Retry-After: " + std::to_string(verdict.retry_after_s) + "\r\n");
                    return;
                case Kind::malformed:
                    self->respond_error(400, nullptr, protocol::error_code::invalid_request,
                                        "Bad request: " + verdict.reason + ".",
                                        self->service_.authenticator.challenge(verdict));
                    return;
                default:
                    self->respond_error(401, nullptr, protocol::error_code::invalid_request,
                                        verdict.kind == Kind::missing
                                            ? "This server needs a bearer access token; its WWW-Authenticate header "
                                              "says where to get one."
                                            : "The access token was refused: " + verdict.reason + ".",
                                        self->service_.authenticator.challenge(verdict));
                }
            });
        });
}

void HttpConnection::on_authenticated(const Request& request) {
    const std::string_view target(request.target().data(), request.target().size());
    if (is_metrics_path(target.substr(0, target.find('?')))) {
        respond_metrics();
        return;
    }
    switch (request.method()) {
    case http::verb::post: on_post(request); return;
    case http::verb::get: on_get(request); return;
    case http::verb::delete_: on_delete(request); return;
    default:
        respond_status(405, "The MCP endpoint takes POST (and GET, DELETE for 2025-11-25 sessions).",
                       "Allow: POST, GET, DELETE\r\n");
    }
}

void HttpConnection::on_post(const Request& request) {
    const std::string_view content_type = header_value(request, http::field::content_type).value_or(std::string_view());
    if (!is_json_media_type(content_type)) {
        respond_error(415, nullptr, protocol::error_code::invalid_request,
                      "Content-Type must be application/json, not '" + std::string(content_type) + "'.");
        return;
    }
    // The answer is JSON or an SSE stream, whichever the client takes: with
    // JSON only, notifications before the result are dropped; with SSE
    // only, even a lone result comes as a stream.
    const auto accept = header_value(request, "Accept");
    const AcceptedAnswers answers = accepted_answers(accept);
    if (!answers.json && !answers.event_stream) {
        respond_error(406, nullptr, protocol::error_code::invalid_request,
                      "Accept must allow application/json or text/event-stream (this endpoint answers with one of "
                      "them), not '" +
                          std::string(accept.value_or("")) + "'.");
        return;
    }
    const std::string& body = request.body();
    protocol::BoundedParse parsed = protocol::parse_bounded(body, service_.limits.max_json_depth);
    if (parsed.outcome == protocol::BoundedParse::Outcome::too_deep) {
        respond_error(400, nullptr, protocol::error_code::invalid_request,
                      "The message nests deeper than " + std::to_string(service_.limits.max_json_depth) +
                          " levels; flatten it.");
        return;
    }
    if (!parsed.parsed()) {
        respond_error(400, nullptr, protocol::error_code::parse_error, "Parse error: " + parsed.error);
        return;
    }
    Json message = std::move(parsed.value);
    if (!message.is_object()) {
        respond_error(400, nullptr, protocol::error_code::invalid_request,
                      message.is_array() ? "JSON-RPC batches are not supported by MCP; send one message per POST."
                                         : "A JSON-RPC message must be a JSON object.");
        return;
    }
    Posted posted;
    const auto method_it = message.find("method"sv);
    posted.method = method_it != message.end() && method_it->is_string() ? method_it->get<std::string>() : "";
    const auto id_it = message.find("id"sv);
    posted.is_request = method_it != message.end() && id_it != message.end();
    if (posted.is_request && (id_it->is_string() || id_it->is_number_integer())) posted.id = *id_it;
    posted.is_response = method_it == message.end() && (message.contains("result"sv) || message.contains("error"sv));
    const Json* revision = named_revision(message);
    const bool modern = revision != nullptr;
    // A 2026-07-28 request ignores an Mcp-Session-Id (its transport has no
    // sessions): a client that kept a stale one is still served.
    const auto session_id =
        modern && stateless_revision(*revision) ? std::nullopt : header_value(request, "Mcp-Session-Id");
    const bool opens_session = !session_id && posted.method == "initialize" && !modern &&
                               header_value(request, "MCP-Protocol-Version") != protocol::kModernVersion;
    posted.message = std::move(message);

    if (opens_session && !posted.is_request) {
        respond_error(400, nullptr, protocol::error_code::invalid_request, "initialize must be a request.");
        return;
    }
    if (session_id || opens_session) {
        const std::string sid = opens_session ? std::string() : std::string(*session_id);
        if (!service_.legacy_sessions.shared()) {
            in_legacy_session(request, std::move(posted), answers, find_legacy_session(sid, principal_));
            return;
        }
        // The session's record is in the shared store: found (or opened)
        // off this loop, then served here.
        auto held = std::make_shared<std::pair<Request, Posted>>(headers_of(request), std::move(posted));
        away_from_loop([this, held, answers, sid, principal = principal_]() -> std::function<void()> {
            auto lookup = std::make_shared<LegacyLookup>(find_legacy_session(sid, principal));
            return [this, held, answers, lookup] {
                in_legacy_session(held->first, std::move(held->second), answers, std::move(*lookup));
            };
        });
        return;
    }
    if (const auto version = header_value(request, "MCP-Protocol-Version");
        version && *version < protocol::kModernVersion && posted.is_request && !modern) {
        // An older revision's request with no session: its client skipped initialize.
        respond_error(400, posted.id, protocol::error_code::invalid_request,
                      "Protocol version " + std::string(*version) +
                          " needs an Mcp-Session-Id header: call initialize first.");
        return;
    }
    serve_post(request, std::move(posted), answers, nullptr, false, "");
}

// A 2025-11-25 session by its id, or (no id) a new one for an initialize.
// Blocks on the state backend when sessions are shared: run off the I/O
// loops then (away_from_loop).
HttpConnection::LegacyLookup HttpConnection::find_legacy_session(const std::string& id,
                                                                 const auth::Principal& principal) {
    LegacyLookup lookup;
    try {
        if (!id.empty()) {
            lookup.session = service_.legacy_sessions.find(id, principal);
            lookup.outcome = lookup.session ? LegacyLookup::Outcome::found : LegacyLookup::Outcome::not_found;
            return lookup;
        }
        auto session = make_legacy_connection(principal);
        if (auto opened = service_.legacy_sessions.open(session)) {
            lookup.session = std::move(session);
            lookup.opened_id = std::move(*opened);
            lookup.outcome = LegacyLookup::Outcome::opened;
        } else {
            lookup.outcome = LegacyLookup::Outcome::full;
        }
    } catch (const state::BackendError& e) {
        lookup.outcome = LegacyLookup::Outcome::unavailable;
        lookup.error = e.what();
    }
    return lookup;
}

void HttpConnection::in_legacy_session(const Request& request, Posted posted, AcceptedAnswers answers,
                                       LegacyLookup lookup) {
    if (refuse_lookup(lookup, posted.id)) return;
    if (lookup.outcome == LegacyLookup::Outcome::opened) {
        serve_post(request, std::move(posted), answers, std::move(lookup.session), true, lookup.opened_id);
        return;
    }
    if (refuse_unsupported_legacy_version(request, posted.id)) return;
    serve_post(request, std::move(posted), answers, std::move(lookup.session), true, "");
}

// Answers a lookup that left no session to serve: the store did not
// answer, no such session, or no room for a new one. True when it did.
bool HttpConnection::refuse_lookup(const LegacyLookup& lookup, const Json& id) {
    switch (lookup.outcome) {
    case LegacyLookup::Outcome::unavailable:
        respond_state_unavailable(id, state::BackendError(lookup.error));
        return true;
    case LegacyLookup::Outcome::not_found:
        respond_error(404, nullptr, protocol::error_code::invalid_request, kSessionNotFound);
        return true;
    case LegacyLookup::Outcome::full:
        respond_error(429, id, protocol::error_code::internal_error,
                      "You hold " + std::to_string(service_.legacy_sessions.per_principal()) +
                          " sessions, the limit per caller (http.max_legacy_sessions_per_principal); end one "
                          "with DELETE first.",
                      "Retry-After: 5\r\n");
        return true;
    default: return false;
    }
}

// A POST whose session (if any) is known: a notification or a response is
// handled and acknowledged, a request begins its exchange.
void HttpConnection::serve_post(const Request& request, Posted posted, AcceptedAnswers answers,
                                std::shared_ptr<protocol::Connection> mcp, bool legacy,
                                const std::string& session_header) {
    const Json& id = posted.id;
    const std::string& method = posted.method;
    if (!posted.is_request) {
        // Notifications and responses: accepted (202) once handled. What is
        // neither (no method and no result, "{}") is refused as the
        // protocol layer words it.
        if (!mcp) {
            mcp = std::make_shared<protocol::Connection>(std::make_shared<DiscardingOutbound>(), principal_);
            mcp->transport = "http";
        }
        // The request a response or a cancellation is about may run on
        // another instance sharing the session: relayed through the shared
        // bus, off this loop.
        const bool shared = legacy && service_.legacy_sessions.shared();
        const bool relay = shared && (posted.is_response || method == "notifications/cancelled");
        const std::string sid = relay ? std::string(request.find("Mcp-Session-Id")->value()) : std::string();
        auto handle = [this, mcp, relay, sid, message = std::make_shared<Json>(std::move(posted.message))]() {
            auto refusal = std::make_shared<RefusalCapture>();
            const bool relayed = !relay || service_.legacy_sessions.relay_client_message(sid, *message);
            service_.server.handle(mcp, std::move(*message), refusal);
            return [this, refusal, relayed] {
                // Handled here all the same (the request may run here), but not
                // acknowledged when it could not be sent on: a client that sends it
                // again loses nothing (a response to a request answered already is
                // ignored, a cancellation repeated changes nothing).
                if (!relayed) {
                    respond_state_unavailable(Json(), state::BackendError("the shared bus did not take the message"));
                    return;
                }
                if (refusal->error) {
                    respond_json(400, protocol::encode(*refusal->error));
                    return;
                }
                respond_status(202);
            };
        };
        here_or_away(shared, std::move(handle));
        return;
    }

    // The answer's stream, for the exchange begin_exchange opens next. A
    // 2026-07-28 request is its own connection: nothing outlives it.
    auto reply = std::make_shared<HttpReply>(weak_from_this(), exchange_ + 1, !legacy);
    if (!mcp) {
        mcp = std::make_shared<protocol::Connection>(reply, principal_);
        mcp->transport = "http";
    }
    // Decoded once: the headers, the scope and the protocol all read this.
    // The request is authorised as the token that sent it: a 2025-11-25
    // session is its owner's (find checked that), but the scopes are this
    // request's, so a narrower token of the owner is refused what it lacks,
    // a broader one steps up, and a scope taken away is gone at once.
    protocol::Incoming incoming =
        service_.server.decode(mcp, principal_, std::move(posted.message),
                               {header_value(request, "traceparent").value_or(std::string_view()),
                                header_value(request, "tracestate").value_or(std::string_view())});
    const protocol::Request& decoded = incoming.request;

    // The revision defines no headers for a 2025-11-25 session's requests.
    if (!legacy) {
        static const std::vector<ParamHeader> kNoParamHeaders;
        const HeaderLookup lookup = [&request](std::string_view name) { return header_value(request, name); };
        const plugins::Tool* tool = decoded.call ? decoded.call->tool : nullptr;
        const Json* arguments = decoded.call ? &decoded.call->arguments : nullptr;
        if (const auto mismatch = check_request_headers(lookup, decoded.method, decoded.params, arguments,
                                                        tool ? tool->param_headers : kNoParamHeaders)) {
            respond_error(400, id, protocol::error_code::header_mismatch, "Header mismatch: " + *mismatch);
            return;
        }
    }

    if (refuse_missing_scope(decoded, id)) return;

    if (method == "subscriptions/listen" && !legacy) {
        // A subscription is nothing but its stream: refused at once when the
        // client takes no SSE or no slot is free, rather than acknowledged
        // with everything after it dropped.
        if (!answers.event_stream) {
            respond_error(406, id, protocol::error_code::invalid_request,
                          "subscriptions/listen answers with an SSE stream: Accept must allow text/event-stream.");
            return;
        }
        if (!claim_stream_or_refuse(id)) return;
    }
    begin_exchange(mcp, std::move(reply), id, std::move(incoming), session_header, legacy, answers);
}

// Runs `work` where what waits on the shared session store runs (the pool,
// never an I/O thread: transport/call_placement.hpp), then what it returns
// back on this connection's loop, unless the connection closed meanwhile.
// Until then the connection counts as answering (it reads no further
// request) and its request as in flight (a drain waits for it).
void HttpConnection::away_from_loop(std::function<std::function<void()>()> work) {
    leave_loop();
    service_.run_shared_session_work([self = shared_from_this(), work = std::move(work)] {
        std::function<void()> then;
        try {
            then = work();
        } catch (const std::exception& e) {
            spdlog::error("http: a 2025-11-25 session's request failed: {}", e.what());
        } catch (...) {
            spdlog::error("http: a 2025-11-25 session's request failed");
        }
        if (!then)
            then = [self] {
                self->respond_error(500, nullptr, protocol::error_code::internal_error,
                                    "Internal error while handling the session's request.");
            };
        self->resume_on_loop(std::move(then));
    });
}

void HttpConnection::serve_page_away(Request request, std::shared_ptr<const plugins::ToolRegistry> pages,
                                     std::size_t path_size) {
    auto job = [self = shared_from_this(), request = std::move(request), pages = std::move(pages), path_size] {
        const auto field = [&request](http::field name) {
            return header_value(request, name).value_or(std::string_view());
        };
        // serve_page answers a family's failure with a page of its own; what
        // else throws is answered here, so the connection always resumes.
        std::shared_ptr<PageResponse> page;
        try {
            page = std::make_shared<PageResponse>(
                serve_page(self->service_.server.host(), *pages, *self->service_.page_form_tokens,
                           {std::string_view(request.method_string().data(), request.method_string().size()),
                            std::string_view(request.target().data(), path_size), field(http::field::host),
                            field(http::field::origin), field(http::field::cookie), field(http::field::content_type),
                            request.body()}));
        } catch (const std::exception& e) {
            spdlog::error("http: a page failed: {}", e.what());
        } catch (...) {
            spdlog::error("http: a page failed");
        }
        self->resume_on_loop([self, page] {
            if (page)
                self->respond_page(*page);
            else
                self->respond_status(500, "The server could not show this page; try again later.");
        });
    };
    leave_loop();
    bool queued = false;
    try {
        queued = service_.run_page_work(std::move(job));
    } catch (const std::exception& e) {
        spdlog::error("http: a page could not be run: {}", e.what());
    }
    // Not run (too many pages wait, or no worker could start): refused now.
    if (!queued) resume_on_loop([self = shared_from_this()] { self->respond_page(busy_page()); });
}

void HttpConnection::here_or_away(bool away, std::function<std::function<void()>()> work) {
    if (away)
        away_from_loop(std::move(work));
    else
        work()();
}

void HttpConnection::leave_loop() {
    phase_ = Phase::answering;
    ++service_.exchanges;
}

void HttpConnection::resume_on_loop(std::function<void()> then) {
    net::dispatch(socket_.get_executor(), [self = shared_from_this(), then = std::move(then)] {
        // Counted until what follows has run: it may begin the exchange
        // (counting it anew), and a drain must not find a gap between.
        if (self->phase_ != Phase::closed) then();
        --self->service_.exchanges;
    });
}

// A 2025-11-25 session speaks its one revision: a request in it naming
// another in MCP-Protocol-Version is refused with 400, as that revision's
// transport asks. Without the header the session's own revision holds.
bool HttpConnection::refuse_unsupported_legacy_version(const Request& request, const Json& id) {
    const auto version = header_value(request, "MCP-Protocol-Version");
    if (!version || *version == protocol::kLegacyVersion) return false;
    respond_error(400, id, protocol::error_code::invalid_request,
                  "MCP-Protocol-Version '" + std::string(*version) + "' is not supported in a " +
                      std::string(protocol::kLegacyVersion) +
                      " session; send MCP-Protocol-Version: " + std::string(protocol::kLegacyVersion) + ".");
    return true;
}

// A direct call of a tool whose scope the token lacks is answered the HTTP
// way: 403 and a challenge naming the scope to ask for (step-up). The
// decision is protocol::scope_refusal's, the one every route to a tool meets.
bool HttpConnection::refuse_missing_scope(const protocol::Request& decoded, const Json& id) {
    if (!service_.authenticator.enabled() || !decoded.call || !decoded.call->scope_refusal) return false;
    const plugins::Tool& tool = *decoded.call->tool;
    respond_error(403, id, protocol::error_code::invalid_request, decoded.call->scope_refusal->message,
                  service_.authenticator.insufficient_scope_challenge(principal_, tool.scope));
    return true;
}

// Long-lived streams (subscriptions/listen, a session's GET) are nothing
// but their stream: without a slot they are refused at once, 503 when the
// server is full, 429 when this caller holds its share.
bool HttpConnection::claim_stream_or_refuse(const Json& id) {
    switch (service_.claim_stream(principal_.owner_key())) {
    case HttpService::StreamClaim::granted:
        stream_slot_ = true;
        stream_owner_ = principal_.owner_key();
        return true;
    case HttpService::StreamClaim::server_full:
        respond_error(503, id, protocol::error_code::internal_error,
                      "The server has " + std::to_string(service_.settings.max_streams) +
                          " streams open, its limit (http.max_streams); retry later.",
                      "Retry-After: 5\r\n");
        return false;
    case HttpService::StreamClaim::principal_full:
        respond_error(429, id, protocol::error_code::internal_error,
                      "You have " + std::to_string(service_.settings.max_streams_per_principal) +
                          " streams open, the limit per caller (http.max_streams_per_principal); close one first.",
                      "Retry-After: 5\r\n");
        return false;
    }
    return false;
}

void HttpConnection::on_get(const Request& request) {
    const auto session_id = request.find("Mcp-Session-Id");
    if (session_id == request.end()) {
        respond_status(405, "GET opens the stream of a 2025-11-25 session; send its Mcp-Session-Id.",
                       "Allow: POST, DELETE\r\n");
        return;
    }
    const std::string sid(session_id->value());
    if (!service_.legacy_sessions.shared()) {
        open_session_stream(request, find_legacy_session(sid, principal_));
        return;
    }
    auto held = std::make_shared<Request>(headers_of(request));
    away_from_loop([this, held, sid, principal = principal_]() -> std::function<void()> {
        auto lookup = std::make_shared<LegacyLookup>(find_legacy_session(sid, principal));
        return [this, held, lookup] { open_session_stream(*held, std::move(*lookup)); };
    });
}

void HttpConnection::open_session_stream(const Request& request, LegacyLookup lookup) {
    if (refuse_lookup(lookup, nullptr)) return; // a GET opens none: found, or refused
    const std::shared_ptr<protocol::Connection> session = std::move(lookup.session);
    if (refuse_unsupported_legacy_version(request, nullptr)) return;
    if (const auto accept = header_value(request, "Accept"); !accepted_answers(accept).event_stream) {
        respond_error(406, nullptr, protocol::error_code::invalid_request,
                      "GET opens an SSE stream: Accept must allow text/event-stream, not '" + std::string(*accept) +
                          "'.");
        return;
    }
    if (!claim_stream_or_refuse(nullptr)) return;
    // The session's resource updates come here; this server starts no
    // requests of its own toward a 2025-11-25 client. Keep-alive comments
    // fill the quiet until either side closes it.
    ++exchange_;
    if (auto stream = std::dynamic_pointer_cast<SessionStream>(session->outbound_ptr())) {
        if (!stream->attach(weak_from_this(), exchange_)) {
            // Ended (DELETE, expiry) since it was found.
            service_.release_stream(stream_owner_);
            stream_slot_ = false;
            respond_error(404, nullptr, protocol::error_code::invalid_request, kSessionNotFound);
            return;
        }
        session_stream_ = stream;
    }
    counted_ = false;
    stream_slot_ = true;
    legacy_ = true;
    mcp_connection_.reset();
    phase_ = Phase::answering;
    start_stream();
    wait_for_bytes();
}

void HttpConnection::on_delete(const Request& request) {
    const auto session_id = request.find("Mcp-Session-Id");
    if (session_id == request.end()) {
        respond_status(405, "DELETE ends a 2025-11-25 session; send its Mcp-Session-Id.", "Allow: POST\r\n");
        return;
    }
    if (refuse_unsupported_legacy_version(request, nullptr)) return;
    auto end_session = [this, sid = std::string(session_id->value()), owner = principal_.owner_key()] {
        std::optional<std::string> unavailable; // why the store did not answer
        bool closed = false;
        try {
            closed = service_.legacy_sessions.close(sid, owner);
        } catch (const state::BackendError& e) {
            unavailable = e.what();
        }
        return [this, closed, unavailable] {
            if (unavailable) {
                respond_state_unavailable(nullptr, state::BackendError(*unavailable));
            } else if (!closed) {
                respond_error(404, nullptr, protocol::error_code::invalid_request,
                              "Session not found: it ended, expired or never existed.");
            } else {
                respond_status(204);
            }
        };
    };
    here_or_away(service_.legacy_sessions.shared(), std::move(end_session));
}

// ---------------------------------------------------------------- answering

void HttpConnection::begin_exchange(const std::shared_ptr<protocol::Connection>& mcp,
                                    std::shared_ptr<protocol::Outbound> reply, const Json& id,
                                    protocol::Incoming&& incoming, const std::string& session_header, bool legacy,
                                    AcceptedAnswers answers) {
    ++exchange_; // the exchange `reply` was made for
    phase_ = Phase::answering;
    request_id_ = id;
    legacy_ = legacy;
    may_stream_ = answers.event_stream;
    must_stream_ = !answers.json;
    counted_ = true;
    ++service_.exchanges;
    session_header_ = session_header.empty() ? "" : "Mcp-Session-Id: " + session_header + "\r\n";
    disarm_timer();
    mcp_connection_ = mcp;
    if (legacy && service_.legacy_sessions.shared()) {
        // Its answer may record the session's handshake in the shared store
        // (initialize, logging/setLevel, resources/subscribe): off this loop.
        service_.run_shared_session_work([self = shared_from_this(), mcp, reply = std::move(reply),
                                          incoming = std::make_shared<protocol::Incoming>(std::move(incoming)),
                                          id = request_id_]() mutable {
            auto executor = self->socket_.get_executor();
            protocol::ReadyCall call;
            try {
                call = self->service_.server.answer(mcp, std::move(*incoming), reply);
            } catch (...) {
                // Whatever it was, the request is answered (else its
                // connection would wait, answering, for ever).
                try {
                    throw;
                } catch (const std::exception& e) {
                    spdlog::error("http: a 2025-11-25 session's request failed: {}", e.what());
                } catch (...) {
                    spdlog::error("http: a 2025-11-25 session's request failed");
                }
                reply->send(protocol::make_error(id, protocol::error_code::internal_error,
                                                 "Internal error while handling the session's request."));
                return;
            }
            // A peer gone while this waited for a worker cancelled nothing
            // (the request was not known yet): cancelled now.
            net::dispatch(executor, [self, mcp, id] {
                if (self->phase_ == Phase::closed) mcp->cancel(id);
            });
            if (call) self->service_.run_call(std::move(call), executor);
        });
    } else if (auto call = service_.server.answer(mcp_connection_, std::move(incoming), std::move(reply))) {
        service_.run_call(std::move(call), socket_.get_executor(), in_read_handler_ ? &call_after_read_ : nullptr);
    }
    // Watch the socket while the answer is pending: the peer closing it
    // cancels the request.
    if (phase_ == Phase::answering || phase_ == Phase::streaming) wait_for_bytes();
}

void HttpConnection::deliver(std::uint64_t exchange, std::string encoded, bool final, int status, std::string headers) {
    net::dispatch(socket_.get_executor(), [self = shared_from_this(), exchange, encoded = std::move(encoded), final,
                                           status, headers = std::move(headers)]() mutable {
        self->on_message(exchange, std::move(encoded), final, status, headers);
    });
}

void HttpConnection::deliver_end(std::uint64_t exchange) {
    net::dispatch(socket_.get_executor(), [self = shared_from_this(), exchange] {
        if (exchange != self->exchange_) return;
        if (self->phase_ == Phase::streaming) {
            self->write("0\r\n\r\n");
            self->finish_exchange();
        } else if (self->phase_ == Phase::answering) {
            // Cancelled with notifications/cancelled: nothing to answer.
            self->respond_status(204);
        }
    });
}

void HttpConnection::on_message(std::uint64_t exchange, std::string encoded, bool final, int status,
                                const std::string& headers) {
    if (exchange != exchange_ || (phase_ != Phase::answering && phase_ != Phase::streaming)) return;
    if (!final) {
        if (phase_ == Phase::answering) {
            // Without a free stream slot the notifications are dropped and the
            // answer still arrives, as plain JSON.
            if (!stream_slot_) {
                if (!may_stream_) return;
                if (service_.claim_stream(principal_.owner_key()) != HttpService::StreamClaim::granted) {
                    may_stream_ = false;
                    return;
                }
                stream_slot_ = true;
                stream_owner_ = principal_.owner_key();
            }
            start_stream();
        }
        write(sse_event(encoded));
        return;
    }
    if (!session_header_.empty() && encoded.find("\"error\"") != std::string::npos &&
        encoded.find("\"result\"") == std::string::npos) {
        // initialize failed: the session it opened is closed again.
        auto close = [&service = service_, sid = session_header_.substr(16, session_header_.size() - 18),
                      owner = principal_.owner_key()] {
            try {
                service.legacy_sessions.close(sid, owner);
            } catch (const state::BackendError& e) {
                spdlog::warn("2025-11-25 session: a failed initialize's record stays until it expires: {}", e.what());
            }
        };
        if (service_.legacy_sessions.shared())
            service_.run_shared_session_work(std::move(close));
        else
            close();
        session_header_.clear();
    }
    if (phase_ == Phase::answering) {
        // Refusals keep their status and come as JSON, whatever Accept says
        // (RFC 9110 §12.5.1 lets an error ignore it).
        if (!must_stream_ || status != 200) {
            respond_json(status, std::move(encoded), session_header_, headers);
            return;
        }
        // A lone result needs no stream slot: the stream ends with it.
        start_stream(headers);
    }
    write(sse_event(encoded), "0\r\n\r\n");
    finish_exchange();
}

void HttpConnection::start_stream(const std::string& extra_headers) {
    std::string head = status_line(200, service_.instance_header);
    head += "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
            "Transfer-Encoding: chunked\r\n";
    head += session_header_;
    head += extra_headers;
    if (!keep_alive_) head += "Connection: close\r\n";
    head += "\r\n";
    write(std::move(head));
    if (phase_ == Phase::closed) return; // the write found the queue over its bound
    phase_ = Phase::streaming;
    arm_timer(service_.settings.keepalive_ms);
}

// What an answered or abandoned request held: its place among the
// exchanges in flight, its stream slot, its MCP connection record.
void HttpConnection::release_exchange() {
    if (counted_) {
        counted_ = false;
        --service_.exchanges;
    }
    if (stream_slot_) {
        stream_slot_ = false;
        service_.release_stream(stream_owner_);
    }
    if (auto stream = std::dynamic_pointer_cast<SessionStream>(session_stream_.lock())) stream->detach(this, exchange_);
    session_stream_.reset();
    mcp_connection_.reset();
}

void HttpConnection::finish_exchange() {
    // A write that found the queue over its bound closed the connection: it stays closed.
    if (phase_ == Phase::closed) return;
    release_exchange();
    session_header_.clear();
    disarm_timer();
    phase_ = Phase::waiting_for_request;
    if (!keep_alive_ || drained_ || service_.draining) {
        close_gracefully();
        return;
    }
    if (buffer_.size() > 0) {
        if (queued_bytes_ > kMostQueuedBeforeParsing) {
            // The next waits until the answers before it are written (do_write),
            // for as long as an idle connection waits for its next request.
            parse_when_written_ = true;
            arm_timer(service_.settings.idle_timeout_ms);
            return;
        }
        parse_pipelined();
        return;
    }
    if (reading_)
        arm_timer(service_.settings.idle_timeout_ms); // the pending read waits for the next request
    else
        wait_for_bytes();
}

// Requests pipelined behind the one answered are handled now, in order,
// from the buffer, whether or not a read is pending. Posted, so a long
// pipeline answered at once does not nest one call per request.
void HttpConnection::parse_pipelined() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
        if (self->phase_ == Phase::waiting_for_request && self->buffer_.size() > 0) self->parse_request();
    });
}

void HttpConnection::peer_gone() {
    if (mcp_connection_) {
        if (legacy_)
            mcp_connection_->cancel(request_id_);
        else
            mcp_connection_->cancel_all();
    }
    close();
}

// ---------------------------------------------------------------- writing

void HttpConnection::respond_json(int status, std::string body, std::string_view extra_headers,
                                  std::string_view more_headers) {
    std::string head = status_line(status, service_.instance_header, 96 + extra_headers.size() + more_headers.size());
    head += "Content-Type: application/json\r\nContent-Length: ";
    head += std::to_string(body.size());
    head += "\r\n";
    head += extra_headers;
    head += more_headers;
    if (!keep_alive_) head += "Connection: close\r\n";
    head += "\r\n";
    write(std::move(head), std::move(body));
    finish_exchange();
}

bool HttpConnection::is_metrics_path(std::string_view path) const {
    const auto* observability = service_.server.observability();
    return observability && observability->metrics_settings().enabled && path == observability->metrics_settings().path;
}

void HttpConnection::respond_metrics() {
    const std::string body = service_.server.observability()->exposition();
    std::string out = status_line(200, service_.instance_header);
    out += "Content-Type: " + std::string(metrics::kExpositionContentType) +
           "\r\nCache-Control: no-store\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    if (!keep_alive_) out += "Connection: close\r\n";
    out += "\r\n";
    out += body;
    write(std::move(out));
    finish_exchange();
}

void HttpConnection::respond_page(const PageResponse& page) {
    std::string out = status_line(page.status, service_.instance_header);
    out += "Content-Type: text/html; charset=utf-8\r\nContent-Length: " + std::to_string(page.body.size()) + "\r\n";
    out += page.headers;
    if (!keep_alive_) out += "Connection: close\r\n";
    out += "\r\n";
    out += page.body;
    write(std::move(out));
    finish_exchange();
}

void HttpConnection::respond_error(int status, const Json& id, int code, const std::string& message,
                                   const std::string& extra_headers) {
    respond_json(status, protocol::encode(protocol::make_error(id, code, message)), extra_headers);
}

// The state backend (Redis) cannot be reached: the whole request is
// refused, with the stable code and when to try again, never served
// without its session.
void HttpConnection::respond_state_unavailable(const Json& id, const state::BackendError& error) {
    spdlog::error("http: state backend: {}", error.what());
    Json message = protocol::make_error(
        id, protocol::error_code::internal_error,
        "STATE_UNAVAILABLE: the host cannot reach its session state right now; try again shortly.");
    message["error"]["data"] = {{"code", "STATE_UNAVAILABLE"}, {"retryAfterSeconds", 1}};
    respond_json(503, protocol::encode(message), "Retry-After: 1\r\n");
}

void HttpConnection::respond_status(int status, const std::string& text, const std::string& extra_headers) {
    std::string out = status_line(status, service_.instance_header);
    if (status == 204) {
        out += extra_headers;
    } else if (status == 202) {
        // No body, but a client reads one until told its length.
        out += "Content-Length: 0\r\n";
        out += extra_headers;
    } else {
        out += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(text.size()) + "\r\n";
        out += extra_headers;
    }
    if (!keep_alive_) out += "Connection: close\r\n";
    out += "\r\n";
    if (status != 204 && status != 202) out += text;
    write(std::move(out));
    finish_exchange();
}

void HttpConnection::write(std::string bytes) {
    if (queue(std::move(bytes)) && !writing_) do_write();
}

// Both parts leave in the same gather write (an answer's head and body).
void HttpConnection::write(std::string first, std::string second) {
    if (queue(std::move(first)) && queue(std::move(second)) && !writing_) do_write();
}

bool HttpConnection::queue(std::string bytes) {
    if (phase_ == Phase::closed) return false;
    queued_bytes_ += bytes.size();
    writes_.push_back(std::move(bytes));
    if (queued_bytes_ > kMaxQueuedBytes) {
        spdlog::warn("http: a client stopped reading its stream; dropping the connection");
        peer_gone();
        return false;
    }
    return true;
}

void HttpConnection::do_write() {
    writing_ = true;
    finishing(true);
    // Everything queued goes out in one gather write; an answer is two
    // buffers, a stream's burst a few more.
    boost::container::small_vector<net::const_buffer, 8> buffers;
    for (const auto& w : writes_)
        buffers.emplace_back(net::buffer(w));
    const std::size_t count = writes_.size();
    net::async_write(socket_, buffers, [self = shared_from_this(), count](boost::system::error_code ec, std::size_t) {
        self->writing_ = false;
        if (self->phase_ == Phase::closed) return;
        if (ec) {
            if (self->phase_ == Phase::answering || self->phase_ == Phase::streaming)
                self->peer_gone();
            else
                self->close();
            return;
        }
        for (std::size_t i = 0; i < count; ++i) {
            self->queued_bytes_ -= self->writes_.front().size();
            self->writes_.pop_front();
        }
        if (self->parse_when_written_ && self->queued_bytes_ <= kMostQueuedBeforeParsing) {
            self->parse_when_written_ = false;
            self->parse_pipelined();
        }
        if (!self->writes_.empty()) {
            self->do_write();
            return;
        }
        self->finishing(self->phase_ == Phase::lingering);
        if (self->phase_ == Phase::lingering) {
            // Its last answer is written: the linger counts from here.
            boost::system::error_code ignored;
            self->socket_.shutdown(Socket::shutdown_send, ignored);
            self->linger_began_ = std::chrono::steady_clock::now();
            self->arm_timer(kLingerMs);
        }
    });
}

void HttpConnection::close_gracefully() {
    if (phase_ == Phase::closed || phase_ == Phase::lingering) return;
    phase_ = Phase::lingering;
    finishing(true);
    release_exchange();
    lingered_bytes_ = 0;
    buffer_.consume(buffer_.size());
    parse_when_written_ = false;
    if (writing_) {
        // The linger's 2 s count from the half-close, once the answers are
        // written (do_write); until then the client has as long to read
        // them as an idle connection has to send its next request.
        arm_timer(service_.settings.idle_timeout_ms);
    } else {
        linger_began_ = std::chrono::steady_clock::now();
        arm_timer(kLingerMs);
        boost::system::error_code ignored;
        socket_.shutdown(Socket::shutdown_send, ignored);
    }
    wait_for_bytes();
}

std::size_t HttpConnection::unsent_bytes() {
    int unsent = 0;
    if (::ioctl(socket_.native_handle(), SIOCOUTQ, &unsent) != 0 || unsent < 0) return 0;
    return static_cast<std::size_t>(unsent);
}

void HttpConnection::close() {
    if (phase_ == Phase::closed) return;
    phase_ = Phase::closed;
    release_exchange();
    finishing(false);
    disarm_timer();
    timer_.cancel(); // the pending wait lets the connection go now
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
}

} // namespace gatehouse::transport
