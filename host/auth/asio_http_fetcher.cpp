#include "auth/asio_http_fetcher.hpp"

#include "crypto/asio_tls_tunnel.hpp"
#include "license/base64.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>

#include <memory>
#include <optional>
#include <thread>

namespace gatehouse::auth {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t kMaxBodyBytes = 1024 * 1024;

struct Url {
    bool tls = false;
    std::string host;
    std::string port;
    std::string target;
};

std::optional<Url> parse_url(const std::string& text) {
    Url url;
    std::string_view rest = text;
    if (rest.rfind("https://", 0) == 0) {
        url.tls = true;
        rest.remove_prefix(8);
    } else if (rest.rfind("http://", 0) == 0) {
        rest.remove_prefix(7);
    } else {
        return std::nullopt;
    }
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    url.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
    std::string_view port;
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        url.host = std::string(authority.substr(1, close - 1));
        if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        url.host = std::string(authority.substr(0, colon));
        port = authority.substr(colon + 1);
    } else {
        url.host = std::string(authority);
    }
    url.port = port.empty() ? (url.tls ? "443" : "80") : std::string(port);
    return url;
}

// One request and its response over a fresh connection; the whole exchange
// shares one deadline.
template <class Stream> class Exchange : public std::enable_shared_from_this<Exchange<Stream>> {
public:
    Exchange(Stream stream, tcp::resolver resolver, Url url, http::request<http::string_body> request,
             std::chrono::milliseconds timeout, HttpFetcher::Done done)
        : stream_(std::move(stream)), resolver_(std::move(resolver)), deadline_(resolver_.get_executor()),
          url_(std::move(url)), request_(std::move(request)), timeout_(timeout), done_(std::move(done)) {}

    void run() {
        lowest().expires_after(timeout_);
        // The stream's own expiry does not cover name resolution.
        deadline_.expires_after(timeout_);
        deadline_.async_wait([weak = this->weak_from_this()](beast::error_code ec) {
            if (ec) return;
            if (auto self = weak.lock()) {
                self->resolver_.cancel();
                self->finish("no answer from " + self->url_.host + " within the timeout");
            }
        });
        resolver_.async_resolve(url_.host, url_.port,
                                [self = this->shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
                                    if (ec)
                                        return self->finish("cannot resolve " + self->url_.host + ": " + ec.message());
                                    self->connect(r);
                                });
    }

private:
    beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

    void connect(const tcp::resolver::results_type& endpoints) {
        lowest().async_connect(
            endpoints, [self = this->shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                if (ec)
                    return self->finish("cannot connect to " + self->url_.host + ":" + self->url_.port + ": " +
                                        ec.message());
                if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
                    self->write();
                } else {
                    self->stream_.async_handshake(net::ssl::stream_base::client, [self](beast::error_code ec) {
                        if (ec) return self->finish("TLS with " + self->url_.host + " failed: " + ec.message());
                        self->write();
                    });
                }
            });
    }

    void write() {
        http::async_write(stream_, request_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->finish("sending to " + self->url_.host + " failed: " + ec.message());
            self->parser_.body_limit(kMaxBodyBytes);
            http::async_read_header(
                self->stream_, self->buffer_, self->parser_, [self](beast::error_code ec, std::size_t) {
                    if (ec) return self->finish("reading from " + self->url_.host + " failed: " + ec.message());
                    // Boost 1.74's parser applies body_limit to chunked bodies only: a
                    // declared length is checked here, before any of it is read.
                    if (const auto length = self->parser_.content_length(); length && *length > kMaxBodyBytes)
                        return self->finish("the answer of " + self->url_.host + " declares " +
                                            std::to_string(*length) + " bytes, more than the " +
                                            std::to_string(kMaxBodyBytes) + " allowed");
                    self->read_body();
                });
        });
    }

    void read_body() {
        http::async_read(stream_, buffer_, parser_,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                             if (ec)
                                 return self->finish("reading from " + self->url_.host + " failed: " + ec.message());
                             if (self->parser_.get().body().size() > kMaxBodyBytes)
                                 return self->finish("the answer of " + self->url_.host + " is larger than " +
                                                     std::to_string(kMaxBodyBytes) + " bytes");
                             FetchResult result;
                             result.status = static_cast<int>(self->parser_.get().result_int());
                             result.body = std::move(self->parser_.get().body());
                             self->complete(std::move(result));
                         });
    }

    void finish(std::string error) {
        FetchResult result;
        result.error = std::move(error);
        complete(std::move(result));
    }

    void complete(FetchResult result) {
        deadline_.cancel();
        beast::error_code ignored;
        lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
        lowest().close();
        // The deadline and the operation it aborted both end here: only the first answers.
        auto done = std::move(done_);
        done_ = nullptr;
        if (done) done(std::move(result));
    }

    Stream stream_;
    tcp::resolver resolver_;
    net::steady_timer deadline_;
    Url url_;
    http::request<http::string_body> request_;
    std::chrono::milliseconds timeout_;
    HttpFetcher::Done done_;
    beast::flat_buffer buffer_;
    http::response_parser<http::string_body> parser_;
};

// HTTP(S) on one io_context and a thread of its own; TLS peers are checked
// as the options say (the system's trust store by default) and against the
// URL's host name.
class AsioHttpFetcher final : public HttpFetcher {
public:
    AsioHttpFetcher(std::chrono::milliseconds timeout, const crypto::TlsClientOptions& tls)
        : timeout_(timeout), verify_(tls.verify), tls_(net::ssl::context::tls_client) {
        crypto::configure_client_context(tls_, tls);
        thread_ = std::thread([this] {
            auto work = net::make_work_guard(io_);
            io_.run();
        });
    }

    ~AsioHttpFetcher() override { AsioHttpFetcher::stop(); }

    void stop() override {
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

    void get(const std::string& url, Done done) override { start("GET", url, {}, {}, std::move(done)); }

    void post_form(const std::string& url, std::string body, std::string basic_credentials, Done done) override {
        start("POST", url, std::move(body), "Basic " + license::base64_encode(basic_credentials), std::move(done));
    }

    void post(std::function<void()> work) override { net::post(io_, std::move(work)); }

    void post_after(std::chrono::milliseconds delay, std::function<void()> work) override {
        net::post(io_, [this, delay, work = std::move(work)]() mutable {
            auto timer = std::make_shared<net::steady_timer>(io_, delay);
            timer->async_wait([timer, work = std::move(work)](beast::error_code ec) {
                if (!ec) work();
            });
        });
    }

private:
    void start(const std::string& method, const std::string& url_text, std::string body, std::string authorization,
               Done done) {
        const auto url = parse_url(url_text);
        if (!url) {
            net::post(io_, [done = std::move(done), url_text] {
                FetchResult r;
                r.error = "'" + url_text + "' is not an http:// or https:// URL";
                done(std::move(r));
            });
            return;
        }
        http::request<http::string_body> request(method == "GET" ? http::verb::get : http::verb::post, url->target, 11);
        const bool default_port = url->port == (url->tls ? "443" : "80");
        request.set(http::field::host, default_port ? url->host : url->host + ":" + url->port);
        request.set(http::field::user_agent, "gatehouse");
        request.set(http::field::accept, "application/json");
        request.set(http::field::connection, "close");
        if (!authorization.empty()) request.set(http::field::authorization, authorization);
        if (method != "GET") {
            request.set(http::field::content_type, "application/x-www-form-urlencoded");
            request.body() = std::move(body);
            request.prepare_payload();
        }
        net::post(io_, [this, url = *url, request = std::move(request), done = std::move(done)]() mutable {
            tcp::resolver resolver(io_);
            if (!url.tls) {
                std::make_shared<Exchange<beast::tcp_stream>>(beast::tcp_stream(io_), std::move(resolver),
                                                              std::move(url), std::move(request), timeout_,
                                                              std::move(done))
                    ->run();
                return;
            }
            beast::ssl_stream<beast::tcp_stream> stream(io_, tls_);
            SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str());
            if (verify_) stream.set_verify_callback(net::ssl::host_name_verification(url.host));
            std::make_shared<Exchange<beast::ssl_stream<beast::tcp_stream>>>(
                std::move(stream), std::move(resolver), std::move(url), std::move(request), timeout_, std::move(done))
                ->run();
        });
    }

    std::chrono::milliseconds timeout_;
    bool verify_;
    net::ssl::context tls_; // before io_: calls abandoned in io_ hold TLS streams
    net::io_context io_;
    std::thread thread_;
};

} // namespace

std::unique_ptr<HttpFetcher> make_asio_http_fetcher(std::chrono::milliseconds timeout,
                                                    const crypto::TlsClientOptions& tls) {
    return std::make_unique<AsioHttpFetcher>(timeout, tls);
}

} // namespace gatehouse::auth
