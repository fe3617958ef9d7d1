#include "limits/redis_buckets.hpp"

#include "state/redis_client.hpp"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

namespace gatehouse::limits {

namespace {

// KEYS: the call's buckets. ARGV: each bucket's calls per second and burst,
// in the order of KEYS. The same arithmetic as LocalBuckets, in
// microseconds of Redis's clock: a missing bucket is full; a clock that
// went back refills nothing. Answers {0, 0} when every bucket gave a token,
// else {the bucket (1-based) that waits longest, that wait in ms} and
// nothing is written. A bucket expires when it would be full again, which
// is the same as missing.
constexpr char kTakeScript[] = R"lua(
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local tokens, updated = {}, {}
local short, wait = 0, 0
for i, key in ipairs(KEYS) do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local held = redis.call('HMGET', key, 'tokens', 'updated')
  local t, u = burst, now
  if held[1] and held[2] then
    t, u = tonumber(held[1]), tonumber(held[2])
    if now > u then
      t = math.min(burst, t + (now - u) / 1000000 * rate)
      u = now
    end
  end
  tokens[i], updated[i] = t, u
  if t < 1 then
    local ms = math.max(1, math.ceil((1 - t) / rate * 1000))
    if ms > wait then short, wait = i, ms end
  end
end
if short > 0 then return {short, wait} end
for i, key in ipairs(KEYS) do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local left = tokens[i] - 1
  redis.call('HSET', key, 'tokens', string.format('%.17g', left), 'updated', string.format('%.17g', updated[i]))
  redis.call('PEXPIRE', key, math.ceil((burst - left) / rate * 1000) + 1)
end
return {0, 0}
)lua";

std::string number(double value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    return std::string(text, end);
}

class RedisBuckets final : public BucketStore {
public:
    explicit RedisBuckets(std::shared_ptr<state::RedisClient> redis)
        : redis_(std::move(redis)), key_prefix_(redis_->prefix() + "rate:") {
        const state::RedisValue sha = redis_->command({"SCRIPT", "LOAD", kTakeScript});
        if (sha.type != state::RedisValue::Type::text || sha.text.empty()) fault("SCRIPT LOAD");
        sha_ = sha.text;
    }

    std::optional<Shortfall> take(std::span<const BucketDraw> draws, Clock::time_point) override {
        std::vector<std::string> words;
        words.reserve(3 + draws.size() * 3);
        words.emplace_back("EVALSHA");
        words.push_back(sha_);
        words.push_back(std::to_string(draws.size()));
        for (const auto& draw : draws)
            words.push_back(key_prefix_ + std::string(draw.key));
        for (const auto& draw : draws) {
            words.push_back(number(draw.limit->calls_per_second));
            words.push_back(number(draw.limit->burst));
        }
        state::RedisValue reply;
        try {
            reply = redis_->command(words);
        } catch (const state::RedisErrorReply& e) {
            // A Redis restarted or flushed has forgotten the script: this
            // call sends it whole, which also loads it for the next ones.
            if (e.reply().rfind("NOSCRIPT", 0) != 0) throw;
            words[0] = "EVAL";
            words[1] = kTakeScript;
            reply = redis_->command(words);
        }
        if (reply.type != state::RedisValue::Type::array || reply.items.size() != 2 ||
            reply.items[0].type != state::RedisValue::Type::integer ||
            reply.items[1].type != state::RedisValue::Type::integer || reply.items[0].integer < 0 ||
            reply.items[0].integer > static_cast<long long>(draws.size()))
            fault("the rate-limit script");
        if (reply.items[0].integer == 0) return std::nullopt;
        return Shortfall{static_cast<std::size_t>(reply.items[0].integer - 1),
                         static_cast<std::uint64_t>(std::max(1LL, reply.items[1].integer))};
    }

private:
    [[noreturn]] void fault(const char* what) const {
        throw state::BackendError("Redis at " + redis_->where() + " answered " + what + " with an unexpected reply");
    }

    std::shared_ptr<state::RedisClient> redis_;
    const std::string key_prefix_;
    std::string sha_;
};

} // namespace

std::shared_ptr<BucketStore> make_redis_buckets(std::shared_ptr<state::RedisClient> redis) {
    return std::make_shared<RedisBuckets>(std::move(redis));
}

std::shared_ptr<BucketStore> make_redis_buckets(const config::RedisSettings& settings) {
    return make_redis_buckets(std::make_shared<state::RedisClient>(settings));
}

} // namespace gatehouse::limits
