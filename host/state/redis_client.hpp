#pragma once

#include "config/config.hpp"
#include "state/state_backend.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace gatehouse::crypto {
class TlsConnector;
class TlsTunnel;
} // namespace gatehouse::crypto

namespace gatehouse::state {

// One reply of Redis, copied out of hiredis so nothing of it leaks to the
// callers. An error reply never reaches them: command() throws it.
struct RedisValue {
    enum class Type { nil, text, status, integer, array };
    Type type = Type::nil;
    std::string text; // text and status
    long long integer = 0;
    std::vector<RedisValue> items; // array
};

// Redis answered a command with an error reply (NOSCRIPT, WRONGTYPE, ...):
// the connection is fine, and reply() is the error as Redis wrote it, for
// callers that handle some of them.
class RedisErrorReply : public BackendError {
public:
    RedisErrorReply(const std::string& what, std::string reply) : BackendError(what), reply_(std::move(reply)) {}
    const std::string& reply() const { return reply_; }

private:
    std::string reply_;
};

// Where Redis is and how to log in, from session.redis (the URL, the
// password file or variable). where() never holds the password.
struct RedisEndpoint {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string socket_path; // unix://; empty for TCP
    bool tls = false;        // rediss://
    std::string user;
    std::string password;
    long db = 0;

    std::string where() const;
};

// Throws BackendError naming what is wrong (never echoing the URL: it may
// hold the password).
RedisEndpoint redis_endpoint(const config::RedisSettings& settings);

// One connection to Redis: hiredis's context and, for rediss://, the TLS
// tunnel beneath it (hiredis 0.14 speaks only to a plain socket: it gets the
// tunnel's local end).
class RedisConnection {
public:
    RedisConnection();
    RedisConnection(redisContext* context, std::unique_ptr<crypto::TlsTunnel> tunnel);
    RedisConnection(RedisConnection&&) noexcept;
    RedisConnection& operator=(RedisConnection&&) noexcept;
    ~RedisConnection();

    redisContext* get() const { return context_.get(); }
    redisContext* operator->() const { return context_.get(); }
    explicit operator bool() const { return context_ != nullptr; }
    // Why the last call on it failed: the tunnel's reason when the TLS
    // session ended (hiredis only saw its socket close), else hiredis's.
    std::string error() const;

private:
    struct ContextDeleter {
        void operator()(redisContext* context) const;
    };
    // Declared first, so destroyed last: freeing the context closes the
    // tunnel's local end, which ends its session.
    std::unique_ptr<crypto::TlsTunnel> tunnel_;
    std::unique_ptr<redisContext, ContextDeleter> context_;
};

// A connection of its own, for SUBSCRIBE: receive() blocks until a message
// arrives, the connection fails (BackendError) or interrupt() is called from
// another thread (then nullopt).
class RedisSubscription {
public:
    ~RedisSubscription();
    std::optional<RedisValue> receive();
    void interrupt();

private:
    friend class RedisClient;
    RedisSubscription(RedisConnection connection, std::string where);
    RedisConnection connection_;
    std::string where_;
    std::atomic<int> fd_{-1};
};

// A Redis server reached through a pool of connections: at most pool_size
// open, a command waiting at most a command timeout for one; a connection
// that failed is dropped and a fresh one opened on the next command, with a
// growing pause (25 ms to 2 s) after failures, so a Redis that is down is
// not hammered by every request. Commands are never retried on their own
// (a SET or a GETDEL may have happened). A write to a Redis that went away
// must be an error, not SIGPIPE: the host ignores that signal
// (transport::StopSignal) before it connects. A rediss:// URL puts each
// connection through a TLS tunnel of the OpenSSL module (loaded only then),
// checked as session.redis.tls says. Thread-safe.
class RedisClient {
public:
    // Connects once, so a wrong address or password stops the host at start.
    explicit RedisClient(const config::RedisSettings& settings);
    ~RedisClient();
    RedisClient(const RedisClient&) = delete;
    RedisClient& operator=(const RedisClient&) = delete;

    // Throws BackendError when Redis cannot be reached or fails the
    // command, RedisErrorReply when it answers with an error.
    RedisValue command(std::initializer_list<std::string_view> words);
    RedisValue command(const std::vector<std::string>& words);

    // A connection outside the pool, subscribed to `channel`.
    std::unique_ptr<RedisSubscription> subscribe(const std::string& channel);

    const std::string& prefix() const { return prefix_; }
    std::string where() const { return endpoint_.where(); }

private:
    using Context = RedisConnection;
    Context connect();
    Context open_socket();
    Context acquire();
    void release(Context context);
    RedisValue run(std::vector<const char*>& argv, const std::vector<std::size_t>& lengths);

    RedisEndpoint endpoint_;
    const std::shared_ptr<const crypto::TlsConnector> tls_; // rediss:// only
    const std::string server_name_;                         // the name its certificate must carry
    const std::string prefix_;
    const std::uint64_t connect_timeout_ms_;
    const std::uint64_t command_timeout_ms_;
    const unsigned pool_size_;
    std::mutex mutex_;
    std::condition_variable given_back_;
    std::vector<Context> idle_;
    unsigned open_ = 0; // connections out of the pool or in it
    std::chrono::milliseconds backoff_{25};
    std::chrono::steady_clock::time_point retry_at_{};
    std::string last_error_;
};

} // namespace gatehouse::state
