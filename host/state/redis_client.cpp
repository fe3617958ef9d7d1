#include "state/redis_client.hpp"

#include "state/state_backend.hpp"

#include "crypto/openssl.hpp"
#include "crypto/tls_settings.hpp"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace gatehouse::state {

namespace {

std::string percent_decoded(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size()) {
            out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

RedisEndpoint parse_url_parts(const std::string& url) {
    RedisEndpoint e;
    std::string_view rest(url);
    if (rest.rfind("unix://", 0) == 0) {
        rest.remove_prefix(7);
        const auto query = rest.find('?');
        e.socket_path = std::string(rest.substr(0, query));
        if (query != std::string_view::npos && rest.substr(query + 1).rfind("db=", 0) == 0)
            e.db = std::stol(std::string(rest.substr(query + 4)));
        if (e.socket_path.empty()) throw BackendError("session.redis.url names no socket path");
        return e;
    }
    e.tls = rest.rfind("rediss://", 0) == 0;
    rest.remove_prefix(e.tls ? 9 : 8); // rediss:// or redis://
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
        const auto credentials = rest.substr(0, at);
        const auto colon = credentials.find(':');
        e.user = percent_decoded(credentials.substr(0, colon));
        if (colon != std::string_view::npos) e.password = percent_decoded(credentials.substr(colon + 1));
        rest.remove_prefix(at + 1);
    }
    if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
        if (slash + 1 < rest.size()) e.db = std::stol(std::string(rest.substr(slash + 1)));
        rest = rest.substr(0, slash);
    }
    if (const auto colon = rest.rfind(':');
        colon != std::string_view::npos && rest.find(']') == std::string_view::npos) {
        e.port = std::stoi(std::string(rest.substr(colon + 1)));
        rest = rest.substr(0, colon);
    }
    if (!rest.empty()) e.host = std::string(rest);
    if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
        e.host = e.host.substr(1, e.host.size() - 2);
    return e;
}

std::shared_ptr<const crypto::TlsConnector> tls_connector(const config::TlsSettings& tls, const std::string& where) {
    if (!tls.verify)
        spdlog::warn("session.redis.tls.verify is false: Redis at {} is reached over TLS WITHOUT checking its "
                     "certificate or name, so anyone on the way can pose as it; never use this in production",
                     where);
    try {
        return crypto::openssl().tls_connector(crypto::client_options(tls));
    } catch (const std::exception& e) {
        throw BackendError("cannot set up TLS for Redis at " + where + " (session.redis.tls): " + e.what());
    }
}

std::string read_secret_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw BackendError("cannot read the Redis password file " + path.string());
    std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r'))
        secret.pop_back();
    return secret;
}

timeval as_timeval(std::uint64_t ms) {
    return {static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

struct ReplyDeleter {
    void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

RedisValue copied(const redisReply& reply) {
    RedisValue v;
    switch (reply.type) {
    case REDIS_REPLY_STRING:
        v.type = RedisValue::Type::text;
        v.text.assign(reply.str, reply.len);
        break;
    case REDIS_REPLY_STATUS:
        v.type = RedisValue::Type::status;
        v.text.assign(reply.str, reply.len);
        break;
    case REDIS_REPLY_INTEGER:
        v.type = RedisValue::Type::integer;
        v.integer = reply.integer;
        break;
    case REDIS_REPLY_ARRAY:
        v.type = RedisValue::Type::array;
        v.items.reserve(reply.elements);
        for (std::size_t i = 0; i < reply.elements; ++i)
            v.items.push_back(copied(*reply.element[i]));
        break;
    default: break; // nil
    }
    return v;
}

} // namespace

std::string RedisEndpoint::where() const {
    if (!socket_path.empty()) return "unix://" + socket_path;
    return (tls ? "rediss://" : "redis://") + host + ":" + std::to_string(port);
}

// A port, a db or a %-escape that is not a number is the URL's mistake, said
// as such.
RedisEndpoint redis_endpoint(const config::RedisSettings& settings) {
    RedisEndpoint endpoint;
    try {
        endpoint = parse_url_parts(settings.url);
    } catch (const BackendError&) {
        throw;
    } catch (const std::exception&) {
        throw BackendError("session.redis.url is not a Redis URL: a port, db number or %-escape in it is not a "
                           "number (redis[s]://[user[:password]@]host[:port][/db] or unix:///path.sock[?db=N])");
    }
    if (!settings.password_file.empty()) endpoint.password = read_secret_file(settings.password_file);
    if (!settings.password_env.empty()) {
        const char* secret = std::getenv(settings.password_env.c_str());
        if (!secret) throw BackendError("the environment variable " + settings.password_env + " is not set");
        endpoint.password = secret;
    }
    return endpoint;
}

void RedisConnection::ContextDeleter::operator()(redisContext* context) const {
    redisFree(context);
}

RedisConnection::RedisConnection() = default;
RedisConnection::RedisConnection(redisContext* context, std::unique_ptr<crypto::TlsTunnel> tunnel)
    : tunnel_(std::move(tunnel)), context_(context) {}
RedisConnection::RedisConnection(RedisConnection&&) noexcept = default;
RedisConnection::~RedisConnection() = default;

RedisConnection& RedisConnection::operator=(RedisConnection&& other) noexcept {
    // The context (the tunnel's local end) goes before its tunnel.
    context_ = std::move(other.context_);
    tunnel_ = std::move(other.tunnel_);
    return *this;
}

std::string RedisConnection::error() const {
    if (tunnel_)
        if (auto failure = tunnel_->failure(); !failure.empty()) return failure;
    return context_ ? context_->errstr : "no connection";
}

RedisSubscription::RedisSubscription(RedisConnection connection, std::string where)
    : connection_(std::move(connection)), where_(std::move(where)), fd_(connection_->fd) {}

RedisSubscription::~RedisSubscription() = default;

std::optional<RedisValue> RedisSubscription::receive() {
    void* raw = nullptr;
    if (redisGetReply(connection_.get(), &raw) != REDIS_OK || !raw) {
        if (fd_ < 0) return std::nullopt; // interrupted
        throw BackendError("the subscription to Redis at " + where_ + " failed: " + connection_.error());
    }
    Reply reply(static_cast<redisReply*>(raw));
    return copied(*reply);
}

// Wakes a receive() blocked on the socket: shutdown, not close, so the
// descriptor stays valid until the context is freed.
void RedisSubscription::interrupt() {
    const int fd = fd_.exchange(-1);
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

RedisClient::RedisClient(const config::RedisSettings& settings)
    : endpoint_(redis_endpoint(settings)),
      tls_(endpoint_.tls ? tls_connector(settings.tls, endpoint_.where()) : nullptr),
      server_name_(settings.tls.server_name.empty() ? endpoint_.host : settings.tls.server_name),
      prefix_(settings.key_prefix), connect_timeout_ms_(settings.connect_timeout_ms),
      command_timeout_ms_(settings.command_timeout_ms), pool_size_(std::max(1u, settings.pool_size)) {
    auto first = connect();
    open_ = 1;
    release(std::move(first));
}

RedisClient::~RedisClient() = default;

RedisClient::Context RedisClient::connect() {
    {
        std::lock_guard lock(mutex_);
        if (std::chrono::steady_clock::now() < retry_at_)
            throw BackendError("Redis at " + endpoint_.where() + " is unreachable (" + last_error_ +
                               "); retrying shortly");
    }
    Context context;
    try {
        context = open_socket();
        if (!context) throw BackendError("out of memory");
        if (context->err) throw BackendError(context->errstr);
        // On the tunnel's local end too: hiredis waits on that socket.
        redisSetTimeout(context.get(), as_timeval(command_timeout_ms_));
        if (!endpoint_.password.empty()) {
            Reply reply(static_cast<redisReply*>(
                endpoint_.user.empty()
                    ? redisCommand(context.get(), "AUTH %b", endpoint_.password.data(), endpoint_.password.size())
                    : redisCommand(context.get(), "AUTH %b %b", endpoint_.user.data(), endpoint_.user.size(),
                                   endpoint_.password.data(), endpoint_.password.size())));
            if (!reply) throw BackendError(context.error());
            if (reply->type == REDIS_REPLY_ERROR) throw BackendError("AUTH refused");
        }
        if (endpoint_.db != 0) {
            Reply reply(static_cast<redisReply*>(redisCommand(context.get(), "SELECT %ld", endpoint_.db)));
            if (!reply) throw BackendError(context.error());
            if (reply->type == REDIS_REPLY_ERROR)
                throw BackendError("SELECT " + std::to_string(endpoint_.db) + " refused");
        }
        if (tls_ && endpoint_.password.empty() && endpoint_.db == 0) {
            // Over TLS 1.3 a server that refuses this host's certificate (or
            // its lack of one) says so only after the handshake: a round trip
            // here makes that a failure to connect, not of the first command.
            Reply reply(static_cast<redisReply*>(redisCommand(context.get(), "PING")));
            if (!reply) throw BackendError(context.error());
        }
    } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(2000));
        retry_at_ = std::chrono::steady_clock::now() + backoff_;
        last_error_ = e.what();
        throw BackendError("cannot reach Redis at " + endpoint_.where() + ": " + e.what());
    }
    std::lock_guard lock(mutex_);
    backoff_ = std::chrono::milliseconds(25);
    retry_at_ = {};
    return context;
}

// hiredis's context on a fresh socket: its own for redis:// and unix://, a
// TLS tunnel's local end for rediss:// (throws what the tunnel met).
RedisClient::Context RedisClient::open_socket() {
    if (!tls_) {
        const timeval timeout = as_timeval(connect_timeout_ms_);
        return Context(endpoint_.socket_path.empty()
                           ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, timeout)
                           : redisConnectUnixWithTimeout(endpoint_.socket_path.c_str(), timeout),
                       nullptr);
    }
    auto tunnel =
        tls_->connect(endpoint_.host, endpoint_.port, server_name_, std::chrono::milliseconds(connect_timeout_ms_));
    const int fd = tunnel->take_fd();
    redisContext* context = redisConnectFd(fd);
    if (!context) ::close(fd);
    return Context(context, std::move(tunnel));
}

// A connection from the pool, a new one while the pool is below its size,
// else the first one given back (waiting at most a command timeout).
RedisClient::Context RedisClient::acquire() {
    {
        std::unique_lock lock(mutex_);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(command_timeout_ms_);
        while (idle_.empty() && open_ >= pool_size_)
            if (given_back_.wait_until(lock, deadline) == std::cv_status::timeout)
                throw BackendError("all " + std::to_string(pool_size_) +
                                   " Redis connections stayed busy (session.redis.pool_size)");
        if (!idle_.empty()) {
            Context context = std::move(idle_.back());
            idle_.pop_back();
            return context;
        }
        ++open_;
    }
    try {
        return connect();
    } catch (...) {
        std::lock_guard lock(mutex_);
        --open_;
        given_back_.notify_one();
        throw;
    }
}

void RedisClient::release(Context context) {
    std::lock_guard lock(mutex_);
    if (context)
        idle_.push_back(std::move(context));
    else
        --open_;
    given_back_.notify_one();
}

RedisValue RedisClient::run(std::vector<const char*>& argv, const std::vector<std::size_t>& lengths) {
    const std::string verb(argv.front(), lengths.front());
    Context context = acquire();
    Reply reply(static_cast<redisReply*>(
        redisCommandArgv(context.get(), static_cast<int>(argv.size()), argv.data(), lengths.data())));
    if (!reply) {
        const std::string error = context.error();
        context = Context();
        release(Context());
        throw BackendError("Redis at " + endpoint_.where() + " failed a " + verb + ": " + error);
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        std::string error(reply->str, reply->len);
        // A server that became a replica (a failover) or lost its primary
        // keeps the connection open and refuses every write on it; the
        // address may lead to the new primary once connected again.
        const bool server_changed_role = error.rfind("READONLY", 0) == 0 || error.rfind("MASTERDOWN", 0) == 0;
        release(server_changed_role ? Context() : std::move(context));
        throw RedisErrorReply("Redis at " + endpoint_.where() + " answered " + verb + " with " + error,
                              std::move(error));
    }
    release(std::move(context));
    return copied(*reply);
}

RedisValue RedisClient::command(std::initializer_list<std::string_view> words) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (auto word : words) {
        argv.push_back(word.data());
        lengths.push_back(word.size());
    }
    return run(argv, lengths);
}

RedisValue RedisClient::command(const std::vector<std::string>& words) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& word : words) {
        argv.push_back(word.data());
        lengths.push_back(word.size());
    }
    return run(argv, lengths);
}

std::unique_ptr<RedisSubscription> RedisClient::subscribe(const std::string& channel) {
    Context context = connect();
    Reply reply(static_cast<redisReply*>(redisCommand(context.get(), "SUBSCRIBE %b", channel.data(), channel.size())));
    if (!reply)
        throw BackendError("Redis at " + endpoint_.where() + " failed SUBSCRIBE " + channel + ": " + context.error());
    if (reply->type == REDIS_REPLY_ERROR)
        throw BackendError("Redis at " + endpoint_.where() + " refused SUBSCRIBE " + channel);
    // Then it waits for messages without a limit; over TCP keep-alive probes
    // notice a peer that vanished (a unix socket has none to set; a TLS
    // tunnel sets them on its own TCP socket).
    redisSetTimeout(context.get(), timeval{0, 0});
    if (endpoint_.socket_path.empty() && !tls_ && redisEnableKeepAlive(context.get()) != REDIS_OK)
        throw BackendError("cannot turn on keep-alive for Redis at " + endpoint_.where());
    return std::unique_ptr<RedisSubscription>(new RedisSubscription(std::move(context), endpoint_.where()));
}

} // namespace gatehouse::state
