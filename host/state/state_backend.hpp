#pragma once

#include "config/config.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gatehouse::state {

class RedisClient;

// The backend itself failed (disk full, database locked too long, ...). The
// caller logs it and refuses with its own code; it never passes silently.
class BackendError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where the host keeps what outlives a request: small values under keys, each
// with an optional expiry. Deliberately as small as a Redis subset (GET, SET PX,
// DEL, GETDEL, SCAN MATCH prefix*) so other backends fit behind it. Thread-safe.
class StateBackend {
public:
    using Clock = std::chrono::system_clock;

    virtual ~StateBackend() = default;

    virtual std::optional<std::string> get(std::string_view key) = 0;

    // ttl of zero: kept until erased.
    virtual void put(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) = 0;

    // True when something was erased.
    virtual bool erase(std::string_view key) = 0;

    // Compare and set: writes `value` (with `ttl`) only while the live key
    // still holds exactly `expected`, as one step against every other
    // writer of the same store; false when it holds something else or is
    // gone. A read-change-write of a record shared by several instances (a
    // gate session) rests on this, so no instance loses another's change.
    virtual bool replace(std::string_view key, std::string_view expected, std::string_view value,
                         std::chrono::milliseconds ttl) = 0;

    // Writes `value` (with `ttl`) only where no live key is, as one step
    // (SET NX); false when one is. What a compare-and-set starts from when
    // nothing is there yet (the first of a list) rests on this: two writers
    // that both found nothing cannot both write.
    virtual bool add(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) = 0;

    // GETDEL: erases a live key and answers the value it held, as one step.
    // Of any number of callers taking the same key at once (threads of this
    // process, or other processes on the same store) exactly one gets the
    // value; the rest get nothing. An expired key gives nothing. What must be
    // used once (an approval code) rests on this.
    virtual std::optional<std::string> take(std::string_view key) = 0;

    // Every live key starting with prefix, with its value, in key order.
    virtual std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) = 0;

    virtual const char* name() const = 0;

    // Throws BackendError when the backend cannot serve right now (readiness).
    virtual void probe() {}
};

std::unique_ptr<StateBackend> make_memory_backend();

// Opens (creating when missing) a SQLite database file in WAL mode.
std::unique_ptr<StateBackend> make_sqlite_backend(const std::string& path);

// Tells SQLite, before anything in the process opens a database, to take its
// page cache one page at a time instead of writing 20 slots (some 87 KiB) at
// each connection's first read: a start opens two small databases (this
// state and the memory family's notes) that hold a few pages each. Process
// wide, for every SQLite user in it; a no-op once SQLite has started.
void take_sqlite_pages_as_needed();

// Connects to Redis (session.redis), checking the address and password at
// once; throws BackendError saying why not. Thread-safe, pooled; a lost
// connection is reopened on the next command, with a pause after failures.
std::unique_ptr<StateBackend> make_redis_backend(const config::RedisSettings& settings);
// The same on a client the host shares with its other Redis parts.
std::unique_ptr<StateBackend> make_redis_backend(std::shared_ptr<RedisClient> redis);

} // namespace gatehouse::state
