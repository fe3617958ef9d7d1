#include "crypto/asio_tls_tunnel.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace gatehouse::crypto {

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

// What the tunnel moves in one step each way; the socketpair's own buffers
// hold the rest, so a user that stops reading stops the reads from the server.
constexpr std::size_t kChunkBytes = 16 * 1024;

// A tunnel may sit idle for hours (a subscription): keep-alive probes notice
// a server that vanished without a word, as hiredis's redisEnableKeepAlive
// would on a socket of its own.
constexpr int kKeepAliveIdleSeconds = 15;
constexpr int kKeepAliveIntervalSeconds = 5;
constexpr int kKeepAliveProbes = 3;

bool is_ip_address(const std::string& name) {
    error_code not_an_address;
    net::ip::make_address(name, not_an_address);
    return !not_an_address;
}

std::string endpoint_text(const std::string& host, int port) {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void tune(tcp::socket& socket) {
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    socket.set_option(net::socket_base::keep_alive(true), ignored);
    const int fd = socket.native_handle();
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepAliveIdleSeconds, sizeof kKeepAliveIdleSeconds);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepAliveIntervalSeconds, sizeof kKeepAliveIntervalSeconds);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepAliveProbes, sizeof kKeepAliveProbes);
}

// OpenSSL names a missing file "system lib" at best: say it plainly first.
void check_readable(const std::string& path, const std::string& what) {
    if (std::FILE* file = std::fopen(path.c_str(), "rb")) {
        std::fclose(file);
        return;
    }
    throw std::invalid_argument("cannot read " + what + " " + path + ": " + std::strerror(errno));
}

bool is_alert(const error_code& ec, int reason) {
    return ec.category() == net::error::get_ssl_category() && ERR_GET_REASON(ec.value()) == reason;
}

// The options, read once: every tunnel's SSL session comes from it
// (OpenSSL makes sessions from one context on several threads safely).
struct Trust {
    net::ssl::context context{net::ssl::context::tls_client};
    std::string trusted_by; // where certificates are checked, for the messages
    bool verify = true;
};

class AsioTlsTunnel final : public TlsTunnel {
public:
    AsioTlsTunnel(std::shared_ptr<Trust> trust, std::string where)
        : trust_(std::move(trust)), tls_(io_, trust_->context), local_(io_), where_(std::move(where)) {}

    ~AsioTlsTunnel() override {
        net::post(io_, [this] { end({}); });
        if (pump_.joinable()) pump_.join();
        if (user_fd_ >= 0) ::close(user_fd_);
    }

    int take_fd() override { return std::exchange(user_fd_, -1); }

    std::string failure() const override {
        std::lock_guard lock(failure_mutex_);
        return failure_;
    }

    // On the caller's thread: nothing else runs io_ yet.
    void open(const std::string& host, int port, const std::string& server_name, std::chrono::milliseconds timeout) {
        name_checked(server_name);
        std::string error;
        bool timed_out = false;
        tcp::resolver resolver(io_);
        net::steady_timer deadline(io_, timeout);
        auto fail = [&](std::string why) {
            if (error.empty()) error = std::move(why);
            deadline.cancel();
        };
        deadline.async_wait([&](const error_code& ec) {
            if (ec) return;
            timed_out = true;
            resolver.cancel();
            error_code ignored;
            tls_.lowest_layer().close(ignored);
        });
        resolver.async_resolve(
            host, std::to_string(port), [&](const error_code& ec, tcp::resolver::results_type found) {
                if (ec) return fail("cannot resolve " + host + ": " + ec.message());
                net::async_connect(tls_.next_layer(), found, [&](const error_code& ec, const tcp::endpoint&) {
                    if (ec) return fail("cannot connect to " + where_ + ": " + ec.message());
                    tune(tls_.next_layer());
                    tls_.async_handshake(net::ssl::stream_base::client, [&](const error_code& ec) {
                        if (ec) return fail(handshake_failure(ec, server_name));
                        deadline.cancel();
                    });
                });
            });
        io_.run();
        io_.restart();
        if (timed_out)
            throw std::runtime_error("no TLS session with " + where_ + " within " + std::to_string(timeout.count()) +
                                     " ms");
        if (!error.empty()) throw std::runtime_error(error);
        start_pump();
    }

private:
    // SNI for a DNS name (never for an address, RFC 6066), and the name the
    // certificate must carry, checked by OpenSSL during the handshake.
    void name_checked(const std::string& server_name) {
        SSL* ssl = tls_.native_handle();
        const bool address = is_ip_address(server_name);
        if (!address && SSL_set_tlsext_host_name(ssl, server_name.c_str()) != 1)
            throw std::runtime_error("OpenSSL refused the server name " + server_name);
        if (!trust_->verify) return;
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        const int set = address ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str())
                                : X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), server_name.size());
        if (set != 1) throw std::runtime_error("OpenSSL refused the server name " + server_name);
    }

    std::string handshake_failure(const error_code& ec, const std::string& server_name) {
        const long verdict = trust_->verify ? SSL_get_verify_result(tls_.native_handle()) : X509_V_OK;
        if (verdict == X509_V_ERR_HOSTNAME_MISMATCH || verdict == X509_V_ERR_IP_ADDRESS_MISMATCH)
            return "hostname mismatch: the certificate of " + where_ + " is not for " + server_name;
        if (verdict != X509_V_OK)
            return "certificate not trusted: the certificate of " + where_ + " does not verify against " +
                   trust_->trusted_by + " (" + X509_verify_cert_error_string(verdict) + ")";
        return "TLS handshake with " + where_ + " failed: " + ec.message();
    }

    std::string session_failure(const error_code& ec) const {
        // TLS 1.3 finishes the client's handshake before the server has read
        // its certificate: a refusal arrives as the first thing read.
        if (is_alert(ec, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED))
            return "TLS handshake with " + where_ + " failed: the server requires a client certificate";
        if (is_alert(ec, SSL_R_SSLV3_ALERT_BAD_CERTIFICATE) || is_alert(ec, SSL_R_TLSV1_ALERT_UNKNOWN_CA))
            return "TLS handshake with " + where_ + " failed: the server refused the client certificate (" +
                   ec.message() + ")";
        if (ec == net::error::eof || ec == net::ssl::error::stream_truncated)
            return "the TLS session with " + where_ + " was closed by the server";
        return "the TLS session with " + where_ + " failed: " + ec.message();
    }

    void start_pump() {
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
            throw std::runtime_error(std::string("cannot make a socket pair: ") + std::strerror(errno));
        error_code ec;
        local_.assign(net::local::stream_protocol(), pair[0], ec);
        user_fd_ = pair[1];
        if (ec) {
            ::close(pair[0]);
            throw std::runtime_error("cannot take a socket pair: " + ec.message());
        }
        to_server();
        to_user();
        pump_ = std::thread([this] { io_.run(); });
    }

    void to_server() {
        local_.async_read_some(net::buffer(up_), [this](const error_code& ec, std::size_t n) {
            if (ec) return end({}); // the user closed its end (or shut it down)
            net::async_write(tls_, net::buffer(up_.data(), n), [this](const error_code& ec, std::size_t) {
                // A connection that breaks for writing fails the pending read
                // too, and that read still holds what the server said last (a
                // TLS 1.3 refusal of this client comes just after the
                // handshake): it ends the tunnel, with the better reason.
                if (ec) return;
                to_server();
            });
        });
    }

    void to_user() {
        tls_.async_read_some(net::buffer(down_), [this](const error_code& ec, std::size_t n) {
            if (ec) return end(session_failure(ec));
            net::async_write(local_, net::buffer(down_.data(), n), [this](const error_code& ec, std::size_t) {
                if (ec) return end({});
                to_user();
            });
        });
    }

    // Either side's end is both sides' end; the reason is kept before the
    // user's end closes, so it is there when the user reads the end.
    void end(std::string failure) {
        if (ended_) return;
        ended_ = true;
        if (!failure.empty()) {
            std::lock_guard lock(failure_mutex_);
            failure_ = std::move(failure);
        }
        error_code ignored;
        local_.close(ignored);
        tls_.lowest_layer().close(ignored);
    }

    std::shared_ptr<Trust> trust_; // first: outlives the SSL session made from it
    net::io_context io_;
    net::ssl::stream<tcp::socket> tls_;
    net::local::stream_protocol::socket local_; // the tunnel's end of the pair
    int user_fd_ = -1;                          // the other, until taken
    const std::string where_;
    std::array<char, kChunkBytes> up_{};   // user -> server
    std::array<char, kChunkBytes> down_{}; // server -> user
    bool ended_ = false;                   // touched on the pump's thread only
    mutable std::mutex failure_mutex_;
    std::string failure_;
    std::thread pump_;
};

class AsioTlsConnector final : public TlsConnector {
public:
    explicit AsioTlsConnector(const TlsClientOptions& options) : trust_(std::make_shared<Trust>()) {
        trust_->trusted_by = configure_client_context(trust_->context, options);
        trust_->verify = options.verify;
    }

    std::unique_ptr<TlsTunnel> connect(const std::string& host, int port, const std::string& server_name,
                                       std::chrono::milliseconds timeout) const override {
        auto tunnel = std::make_unique<AsioTlsTunnel>(trust_, endpoint_text(host, port));
        tunnel->open(host, port, server_name, timeout);
        return tunnel;
    }

private:
    std::shared_ptr<Trust> trust_;
};

} // namespace

std::string configure_client_context(net::ssl::context& context, const TlsClientOptions& options) {
    SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
    error_code ec;
    std::string trusted_by;
    if (options.ca_file.empty()) {
        trusted_by = "the system's trust store";
        context.set_default_verify_paths(ec);
        if (ec) throw std::runtime_error("cannot open the system's trust store: " + ec.message());
    } else {
        trusted_by = "the CA file " + options.ca_file;
        check_readable(options.ca_file, "the CA file");
        context.load_verify_file(options.ca_file, ec);
        if (ec) throw std::invalid_argument("cannot read the CA file " + options.ca_file + ": " + ec.message());
        if (options.system_store_too) {
            trusted_by += " and the system's trust store";
            context.set_default_verify_paths(ec);
            if (ec) throw std::runtime_error("cannot open the system's trust store: " + ec.message());
        }
    }
    if (options.cert_file.empty() != options.key_file.empty())
        throw std::invalid_argument("a client certificate needs both cert_file and key_file");
    if (!options.cert_file.empty()) {
        check_readable(options.cert_file, "the client certificate");
        check_readable(options.key_file, "the client key");
        context.use_certificate_chain_file(options.cert_file, ec);
        if (ec)
            throw std::invalid_argument("cannot read the client certificate " + options.cert_file + ": " +
                                        ec.message());
        context.use_private_key_file(options.key_file, net::ssl::context::pem, ec);
        if (ec || SSL_CTX_check_private_key(context.native_handle()) != 1)
            throw std::invalid_argument("cannot use the client key " + options.key_file + " with " + options.cert_file +
                                        (ec ? ": " + ec.message() : std::string()));
    }
    context.set_verify_mode(options.verify ? net::ssl::verify_peer : net::ssl::verify_none);
    return trusted_by;
}

std::shared_ptr<const TlsConnector> make_asio_tls_connector(const TlsClientOptions& options) {
    return std::make_shared<AsioTlsConnector>(options);
}

} // namespace gatehouse::crypto
