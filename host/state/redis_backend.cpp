// The state backend on Redis (hiredis, from Debian): what several hosts
// behind one address share. Every key is the configured prefix plus the
// host's key; expiry is Redis's own (SET PX), take is GETDEL, and scan is
// SCAN MATCH (never KEYS) and is on no hot path. A write to a Redis that
// went away must be an error, not SIGPIPE: the host ignores that signal
// (transport::StopSignal) before it connects.
#include "state/state_backend.hpp"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gatehouse::state {

namespace {

struct Endpoint {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string socket_path; // unix://; empty for TCP
    std::string user;
    std::string password;
    long db = 0;

    // Where it is, for messages: never the password.
    std::string where() const {
        return socket_path.empty() ? "redis://" + host + ":" + std::to_string(port) : "unix://" + socket_path;
    }
};

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

Endpoint parse_url_parts(const std::string& url) {
    Endpoint e;
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
    rest.remove_prefix(8); // redis://
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

// A port, a db or a %-escape that is not a number is the URL's mistake, said
// as such (the URL is not echoed: it may hold the password).
Endpoint parse_url(const std::string& url) {
    try {
        return parse_url_parts(url);
    } catch (const BackendError&) {
        throw;
    } catch (const std::exception&) {
        throw BackendError("session.redis.url is not a Redis URL: a port, db number or %-escape in it is not a "
                           "number (redis://[user[:password]@]host[:port][/db] or unix:///path.sock[?db=N])");
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

struct ContextDeleter {
    void operator()(redisContext* context) const { redisFree(context); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

// Glob characters in a prefix match themselves in SCAN MATCH.
std::string glob_escaped(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

class RedisBackend final : public StateBackend {
public:
    explicit RedisBackend(const config::RedisSettings& settings)
        : endpoint_(parse_url(settings.url)), prefix_(settings.key_prefix),
          connect_timeout_(as_timeval(settings.connect_timeout_ms)),
          command_timeout_(as_timeval(settings.command_timeout_ms)), pool_size_(std::max(1u, settings.pool_size)),
          wait_limit_(std::chrono::milliseconds(settings.command_timeout_ms)) {
        if (!settings.password_file.empty()) endpoint_.password = read_secret_file(settings.password_file);
        if (!settings.password_env.empty()) {
            const char* secret = std::getenv(settings.password_env.c_str());
            if (!secret) throw BackendError("the environment variable " + settings.password_env + " is not set");
            endpoint_.password = secret;
        }
        // Checked now, so a wrong address or password stops the host at start.
        auto first = connect();
        open_ = 1;
        release(std::move(first));
    }

    std::optional<std::string> get(std::string_view key) override {
        const std::string k = prefix_ + std::string(key);
        Reply reply = command({"GET", k});
        return text_of(*reply, "GET");
    }

    void put(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        const std::string k = prefix_ + std::string(key);
        Reply reply = ttl.count() > 0 ? command({"SET", k, value, "PX", std::to_string(ttl.count())})
                                      : command({"SET", k, value});
        if (reply->type != REDIS_REPLY_STATUS) fault("SET", *reply);
    }

    bool erase(std::string_view key) override {
        const std::string k = prefix_ + std::string(key);
        Reply reply = command({"DEL", k});
        if (reply->type != REDIS_REPLY_INTEGER) fault("DEL", *reply);
        return reply->integer > 0;
    }

    std::optional<std::string> take(std::string_view key) override {
        const std::string k = prefix_ + std::string(key);
        Reply reply = command({"GETDEL", k});
        return text_of(*reply, "GETDEL");
    }

    std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) override {
        const std::string pattern = glob_escaped(prefix_) + glob_escaped(prefix) + "*";
        std::vector<std::string> keys;
        std::string cursor = "0";
        do {
            Reply reply = command({"SCAN", cursor, "MATCH", pattern, "COUNT", "512"});
            if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) fault("SCAN", *reply);
            cursor.assign(reply->element[0]->str, reply->element[0]->len);
            const redisReply* batch = reply->element[1];
            for (std::size_t i = 0; i < batch->elements; ++i)
                keys.emplace_back(batch->element[i]->str, batch->element[i]->len);
        } while (cursor != "0");
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& full : keys) {
            Reply reply = command({"GET", full});
            // Gone (expired, erased) since the scan saw it: not live.
            if (auto value = text_of(*reply, "GET")) out.emplace_back(full.substr(prefix_.size()), std::move(*value));
        }
        return out;
    }

    const char* name() const override { return "redis"; }

    ~RedisBackend() override = default;

private:
    Context connect() {
        {
            std::lock_guard lock(mutex_);
            // After a failure the next attempts wait out a growing pause
            // (to 2 s): a Redis that is down is not hammered by every request.
            if (std::chrono::steady_clock::now() < retry_at_)
                throw BackendError("Redis at " + endpoint_.where() + " is unreachable (" + last_error_ +
                                   "); retrying shortly");
        }
        Context context(endpoint_.socket_path.empty()
                            ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, connect_timeout_)
                            : redisConnectUnixWithTimeout(endpoint_.socket_path.c_str(), connect_timeout_));
        try {
            if (!context) throw BackendError("out of memory");
            if (context->err) throw BackendError(context->errstr);
            redisSetTimeout(context.get(), command_timeout_);
            if (!endpoint_.password.empty()) {
                Reply reply(static_cast<redisReply*>(
                    endpoint_.user.empty()
                        ? redisCommand(context.get(), "AUTH %b", endpoint_.password.data(), endpoint_.password.size())
                        : redisCommand(context.get(), "AUTH %b %b", endpoint_.user.data(), endpoint_.user.size(),
                                       endpoint_.password.data(), endpoint_.password.size())));
                if (!reply) throw BackendError(context->errstr);
                if (reply->type == REDIS_REPLY_ERROR) throw BackendError("AUTH refused");
            }
            if (endpoint_.db != 0) {
                Reply reply(static_cast<redisReply*>(redisCommand(context.get(), "SELECT %ld", endpoint_.db)));
                if (!reply || reply->type == REDIS_REPLY_ERROR)
                    throw BackendError("SELECT " + std::to_string(endpoint_.db) + " refused");
            }
        } catch (const BackendError& e) {
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

    // A connection from the pool, a new one while the pool is below its
    // size, else the first one given back (waiting at most a command timeout).
    Context acquire() {
        {
            std::unique_lock lock(mutex_);
            const auto deadline = std::chrono::steady_clock::now() + wait_limit_;
            while (idle_.empty() && open_ >= pool_size_)
                if (given_back_.wait_until(lock, deadline) == std::cv_status::timeout)
                    throw BackendError("all " + std::to_string(pool_size_) + " Redis connections stayed busy (" +
                                       "session.redis.pool_size)");
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

    void release(Context context) {
        std::lock_guard lock(mutex_);
        if (context)
            idle_.push_back(std::move(context));
        else
            --open_;
        given_back_.notify_one();
    }

    // One command on a pooled connection. A connection that failed is
    // dropped (the next command opens a fresh one); a command is never
    // retried on its own, since SET and GETDEL may have happened.
    Reply command(std::initializer_list<std::string_view> words) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        for (auto word : words) {
            argv.push_back(word.data());
            lengths.push_back(word.size());
        }
        Context context = acquire();
        Reply reply(static_cast<redisReply*>(
            redisCommandArgv(context.get(), static_cast<int>(argv.size()), argv.data(), lengths.data())));
        if (!reply) {
            const std::string error = context->errstr;
            context.reset();
            release(nullptr);
            throw BackendError("Redis at " + endpoint_.where() + " failed a " + std::string(*words.begin()) + ": " +
                               error);
        }
        release(std::move(context));
        if (reply->type == REDIS_REPLY_ERROR) fault(std::string(*words.begin()).c_str(), *reply);
        return reply;
    }

    std::optional<std::string> text_of(const redisReply& reply, const char* what) const {
        if (reply.type == REDIS_REPLY_NIL) return std::nullopt;
        if (reply.type != REDIS_REPLY_STRING) fault(what, reply);
        return std::string(reply.str, reply.len);
    }

    [[noreturn]] void fault(const char* what, const redisReply& reply) const {
        const std::string detail =
            reply.type == REDIS_REPLY_ERROR ? std::string(reply.str, reply.len) : "an unexpected reply";
        throw BackendError("Redis at " + endpoint_.where() + " answered " + what + " with " + detail);
    }

    Endpoint endpoint_;
    const std::string prefix_;
    const timeval connect_timeout_;
    const timeval command_timeout_;
    const unsigned pool_size_;
    const std::chrono::milliseconds wait_limit_;
    std::mutex mutex_;
    std::condition_variable given_back_;
    std::vector<Context> idle_;
    unsigned open_ = 0; // connections out of the pool or in it
    std::chrono::milliseconds backoff_{25};
    std::chrono::steady_clock::time_point retry_at_{};
    std::string last_error_;
};

} // namespace

std::unique_ptr<StateBackend> make_redis_backend(const config::RedisSettings& settings) {
    return std::make_unique<RedisBackend>(settings);
}

} // namespace gatehouse::state
