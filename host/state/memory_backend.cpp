#include "state/state_backend.hpp"

#include <map>
#include <mutex>

namespace gatehouse::state {

namespace {

// Everything in the process: lost on restart, which is the point of it.
class MemoryBackend final : public StateBackend {
public:
    // When an entry written now with `ttl` expires: never without one, nor
    // for a TTL past what the clock can count (a plugin's "a very long
    // time"), where now + ttl would overflow and expire it at once.
    static Clock::time_point expiry(std::chrono::milliseconds ttl) {
        if (ttl.count() <= 0) return Clock::time_point::max();
        const auto now = Clock::now();
        if (ttl >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now))
            return Clock::time_point::max();
        return now + ttl;
    }

    std::optional<std::string> get(std::string_view key) override {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return std::nullopt;
        if (expired(it->second)) {
            entries_.erase(it);
            return std::nullopt;
        }
        return it->second.value;
    }

    void put(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        std::lock_guard lock(mutex_);
        Entry e{std::string(value), expiry(ttl)};
        entries_.insert_or_assign(std::string(key), std::move(e));
        sweep();
    }

    bool replace(std::string_view key, std::string_view expected, std::string_view value,
                 std::chrono::milliseconds ttl) override {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end() || expired(it->second) || it->second.value != expected) return false;
        it->second = Entry{std::string(value), expiry(ttl)};
        return true;
    }

    bool add(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it != entries_.end() && !expired(it->second)) return false;
        Entry e{std::string(value), expiry(ttl)};
        if (it != entries_.end())
            it->second = std::move(e);
        else
            entries_.emplace(std::string(key), std::move(e));
        return true;
    }

    bool erase(std::string_view key) override {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return false;
        entries_.erase(it);
        return true;
    }

    std::optional<std::string> take(std::string_view key) override {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return std::nullopt;
        std::optional<std::string> value;
        if (!expired(it->second)) value = std::move(it->second.value);
        entries_.erase(it);
        return value;
    }

    std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) override {
        std::lock_guard lock(mutex_);
        std::vector<std::pair<std::string, std::string>> out;
        for (auto it = entries_.lower_bound(prefix); it != entries_.end(); ++it) {
            if (it->first.compare(0, prefix.size(), prefix) != 0) break;
            if (!expired(it->second)) out.emplace_back(it->first, it->second.value);
        }
        return out;
    }

    const char* name() const override { return "memory"; }

private:
    struct Entry {
        std::string value;
        Clock::time_point expires;
    };
    static bool expired(const Entry& e) { return Clock::now() >= e.expires; }

    // An expired entry is gone for readers at once, but only a sweep frees
    // it: keys written once and never read again would otherwise stay for
    // good. Each write looks at the next few entries after the last it
    // looked at, round the table, so an expired entry is freed within about
    // a table's length of writes, at a bounded cost to each. Under mutex_.
    static constexpr int kSweptPerWrite = 4;
    void sweep() {
        auto it = entries_.upper_bound(swept_to_);
        for (int looked = 0; looked < kSweptPerWrite; ++looked) {
            if (it == entries_.end()) {
                it = entries_.begin();
                if (it == entries_.end()) break;
            }
            if (expired(it->second)) {
                it = entries_.erase(it);
                continue;
            }
            swept_to_ = it->first;
            ++it;
        }
    }
    std::string swept_to_;

    std::mutex mutex_;
    std::map<std::string, Entry, std::less<>> entries_;
};

} // namespace

std::unique_ptr<StateBackend> make_memory_backend() {
    return std::make_unique<MemoryBackend>();
}

} // namespace gatehouse::state
