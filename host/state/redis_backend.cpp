// The state backend on Redis (hiredis, from Debian): what several hosts
// behind one address share. Every key is the configured prefix plus the
// host's key; expiry is Redis's own (SET PX), take is GETDEL, and scan is
// SCAN MATCH (never KEYS) and is on no hot path.
#include "state/redis_client.hpp"
#include "state/state_backend.hpp"

#include <algorithm>

namespace gatehouse::state {

namespace {

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
    explicit RedisBackend(std::shared_ptr<RedisClient> redis) : redis_(std::move(redis)) {}

    std::optional<std::string> get(std::string_view key) override {
        return text_of(redis_->command({"GET", redis_->prefix() + std::string(key)}), "GET");
    }

    void put(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        const std::string k = redis_->prefix() + std::string(key);
        const RedisValue reply = ttl.count() > 0 ? redis_->command({"SET", k, value, "PX", std::to_string(ttl.count())})
                                                 : redis_->command({"SET", k, value});
        if (reply.type != RedisValue::Type::status) fault("SET");
    }

    bool add(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        const std::string k = redis_->prefix() + std::string(key);
        const RedisValue reply = ttl.count() > 0
                                     ? redis_->command({"SET", k, value, "NX", "PX", std::to_string(ttl.count())})
                                     : redis_->command({"SET", k, value, "NX"});
        if (reply.type == RedisValue::Type::nil) return false;
        if (reply.type != RedisValue::Type::status) fault("SET NX");
        return true;
    }

    // A script runs alone in Redis: nothing comes between its GET and SET.
    bool replace(std::string_view key, std::string_view expected, std::string_view value,
                 std::chrono::milliseconds ttl) override {
        static constexpr std::string_view kScript =
            "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
            "if ARGV[3] == '0' then redis.call('SET', KEYS[1], ARGV[2]) "
            "else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end return 1";
        const RedisValue reply = redis_->command(
            {"EVAL", kScript, "1", redis_->prefix() + std::string(key), expected, value, std::to_string(ttl.count())});
        if (reply.type != RedisValue::Type::integer) fault("EVAL");
        return reply.integer == 1;
    }

    bool erase(std::string_view key) override {
        const RedisValue reply = redis_->command({"DEL", redis_->prefix() + std::string(key)});
        if (reply.type != RedisValue::Type::integer) fault("DEL");
        return reply.integer > 0;
    }

    std::optional<std::string> take(std::string_view key) override {
        return text_of(redis_->command({"GETDEL", redis_->prefix() + std::string(key)}), "GETDEL");
    }

    std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) override {
        const std::string pattern = glob_escaped(redis_->prefix()) + glob_escaped(prefix) + "*";
        std::vector<std::string> keys;
        std::string cursor = "0";
        do {
            RedisValue reply = redis_->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "512"});
            if (reply.type != RedisValue::Type::array || reply.items.size() != 2 ||
                reply.items[1].type != RedisValue::Type::array)
                fault("SCAN");
            cursor = reply.items[0].text;
            for (auto& key : reply.items[1].items)
                keys.push_back(std::move(key.text));
        } while (cursor != "0");
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        std::vector<std::pair<std::string, std::string>> out;
        const std::size_t prefix_size = redis_->prefix().size();
        for (const auto& full : keys)
            // Gone (expired, erased) since the scan saw it: not live.
            if (auto value = text_of(redis_->command({"GET", full}), "GET"))
                out.emplace_back(full.substr(prefix_size), std::move(*value));
        return out;
    }

    const char* name() const override { return "redis"; }

    void probe() override { (void)redis_->command({"PING"}); }

private:
    std::optional<std::string> text_of(RedisValue reply, const char* what) const {
        if (reply.type == RedisValue::Type::nil) return std::nullopt;
        if (reply.type != RedisValue::Type::text) fault(what);
        return std::move(reply.text);
    }

    [[noreturn]] void fault(const char* what) const {
        throw BackendError("Redis at " + redis_->where() + " answered " + what + " with an unexpected reply");
    }

    std::shared_ptr<RedisClient> redis_;
};

} // namespace

std::unique_ptr<StateBackend> make_redis_backend(std::shared_ptr<RedisClient> redis) {
    return std::make_unique<RedisBackend>(std::move(redis));
}

std::unique_ptr<StateBackend> make_redis_backend(const config::RedisSettings& settings) {
    return make_redis_backend(std::make_shared<RedisClient>(settings));
}

} // namespace gatehouse::state
