#include "state/state_backend.hpp"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <filesystem>
#include <mutex>

#include <fcntl.h>
#include <unistd.h>

namespace gatehouse::state {

namespace {

// One SQLite file, WAL, one connection guarded by a mutex (so SQLite's own
// locking is left off): the values are small and every statement is a
// single indexed row, so contention is brief.
// synchronous=NORMAL in WAL mode loses nothing when the process dies; only a
// power cut can drop the last commits.
class SqliteBackend final : public StateBackend {
public:
    explicit SqliteBackend(const std::string& path) {
        std::error_code ec;
        const auto parent = std::filesystem::path(path).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent, ec);
        // Made here, the file is its user's alone: it holds every caller's
        // sessions and tasks (SQLite gives its -wal and -shm files its mode).
        if (const int made = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            made >= 0)
            ::close(made);
        if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            nullptr) != SQLITE_OK) {
            std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
            sqlite3_close(db_);
            db_ = nullptr;
            throw BackendError("cannot open state database " + path + ": " + why);
        }
        sqlite3_busy_timeout(db_, 5000);
        exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        exec("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
             "expires_ms INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID");
        // Only rows with an expiry: what the sweep reads, in expiry order.
        exec("CREATE INDEX IF NOT EXISTS state_expiry ON state(expires_ms) WHERE expires_ms > 0");
        // Written once: setting it on every start would be a write transaction each time.
        {
            Statement version(db_, "PRAGMA user_version");
            if (sqlite3_step(version.get()) == SQLITE_ROW && sqlite3_column_int(version.get(), 0) == 0)
                exec("PRAGMA user_version=1");
        }
        const auto now = now_ms();
        std::lock_guard lock(mutex_);
        Statement purge(db_, "DELETE FROM state WHERE expires_ms > 0 AND expires_ms <= ?");
        sqlite3_bind_int64(purge.get(), 1, now);
        purge.step_done();
    }

    ~SqliteBackend() override {
        for (auto* statement : cached_)
            sqlite3_finalize(statement);
        sqlite3_close(db_);
    }

    std::optional<std::string> get(std::string_view key) override {
        std::lock_guard lock(mutex_);
        Statement s = cached(kGet, "SELECT value FROM state WHERE key = ? AND (expires_ms = 0 OR expires_ms > ?)");
        bind_text(s, 1, key);
        sqlite3_bind_int64(s.get(), 2, now_ms());
        const int rc = sqlite3_step(s.get());
        if (rc == SQLITE_ROW) return column_text(s, 0);
        if (rc != SQLITE_DONE) fail("read");
        return std::nullopt;
    }

    void put(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        std::lock_guard lock(mutex_);
        Statement s =
            cached(kPut, "INSERT INTO state(key, value, expires_ms) VALUES(?, ?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires_ms = excluded.expires_ms");
        bind_text(s, 1, key);
        bind_text(s, 2, value);
        sqlite3_bind_int64(s.get(), 3, ttl.count() > 0 ? now_ms() + ttl.count() : 0);
        s.step_done();
        sweep();
    }

    // One statement, one write transaction: no other writer of the file
    // comes between the comparison and the write.
    bool replace(std::string_view key, std::string_view expected, std::string_view value,
                 std::chrono::milliseconds ttl) override {
        std::lock_guard lock(mutex_);
        const auto now = now_ms();
        Statement s = cached(kReplace, "UPDATE state SET value = ?, expires_ms = ? WHERE key = ? AND value = ? AND "
                                       "(expires_ms = 0 OR expires_ms > ?)");
        bind_text(s, 1, value);
        sqlite3_bind_int64(s.get(), 2, ttl.count() > 0 ? now + ttl.count() : 0);
        bind_text(s, 3, key);
        bind_text(s, 4, expected);
        sqlite3_bind_int64(s.get(), 5, now);
        s.step_done();
        return sqlite3_changes(db_) > 0;
    }

    // One statement: an expired row is taken over, a live one left as it is.
    bool add(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        std::lock_guard lock(mutex_);
        const auto now = now_ms();
        Statement s = cached(kAdd, "INSERT INTO state(key, value, expires_ms) VALUES(?, ?, ?) ON CONFLICT(key) DO "
                                   "UPDATE SET value = excluded.value, expires_ms = excluded.expires_ms WHERE "
                                   "state.expires_ms > 0 AND state.expires_ms <= ?");
        bind_text(s, 1, key);
        bind_text(s, 2, value);
        sqlite3_bind_int64(s.get(), 3, ttl.count() > 0 ? now + ttl.count() : 0);
        sqlite3_bind_int64(s.get(), 4, now);
        s.step_done();
        return sqlite3_changes(db_) > 0;
    }

    bool erase(std::string_view key) override {
        std::lock_guard lock(mutex_);
        Statement s = cached(kErase, "DELETE FROM state WHERE key = ?");
        bind_text(s, 1, key);
        s.step_done();
        return sqlite3_changes(db_) > 0;
    }

    // One statement, so one write transaction: SQLite lets a single writer
    // at a time hold the database (across processes too, WAL or not), and
    // the row is gone when that transaction commits. A second taker, here or
    // in another instance on the same file, finds no row to delete.
    std::optional<std::string> take(std::string_view key) override {
        std::lock_guard lock(mutex_);
        Statement s =
            cached(kTake, "DELETE FROM state WHERE key = ? AND (expires_ms = 0 OR expires_ms > ?) RETURNING value");
        bind_text(s, 1, key);
        sqlite3_bind_int64(s.get(), 2, now_ms());
        int rc = sqlite3_step(s.get());
        std::optional<std::string> value;
        if (rc == SQLITE_ROW) {
            value = column_text(s, 0);
            // The delete commits when the statement runs to its end.
            rc = sqlite3_step(s.get());
        }
        if (rc != SQLITE_DONE) fail("take");
        return value;
    }

    std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) override {
        std::lock_guard lock(mutex_);
        // Range scan on the primary key: [prefix, prefix + 0xFF) covers every
        // key that starts with prefix, with no LIKE escaping to get wrong.
        Statement s = cached(kScan, "SELECT key, value FROM state WHERE key >= ? AND key < ? AND (expires_ms = 0 OR "
                                    "expires_ms > ?) ORDER BY key");
        std::string upper(prefix);
        upper.push_back(static_cast<char>(0xff));
        bind_text(s, 1, prefix);
        bind_text(s, 2, upper);
        sqlite3_bind_int64(s.get(), 3, now_ms());
        std::vector<std::pair<std::string, std::string>> out;
        int rc;
        while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
            out.emplace_back(column_text(s, 0), column_text(s, 1));
        if (rc != SQLITE_DONE) fail("scan");
        return out;
    }

    const char* name() const override { return "sqlite"; }

private:
    // A statement for one use: prepared here and finalized at the end, or
    // (Cached) taken from the backend's cache, prepared once, and reset at
    // the end, so it never holds a read transaction open between uses (WAL:
    // that would pin the reader to an old snapshot and stall checkpoints).
    class Statement {
    public:
        Statement(sqlite3* db, const char* sql) : db_(db) {
            if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
                throw BackendError(std::string("state database: ") + sqlite3_errmsg(db));
        }
        Statement(sqlite3* db, sqlite3_stmt*& cached, const char* sql) : db_(db), cached_(true) {
            if (!cached && sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &cached, nullptr) != SQLITE_OK)
                throw BackendError(std::string("state database: ") + sqlite3_errmsg(db));
            stmt_ = cached;
        }
        ~Statement() {
            if (!cached_) {
                sqlite3_finalize(stmt_);
                return;
            }
            sqlite3_reset(stmt_);
            sqlite3_clear_bindings(stmt_);
        }
        Statement(const Statement&) = delete;
        Statement& operator=(const Statement&) = delete;
        sqlite3_stmt* get() const { return stmt_; }
        void step_done() {
            if (sqlite3_step(stmt_) != SQLITE_DONE)
                throw BackendError(std::string("state database: ") + sqlite3_errmsg(db_));
        }

    private:
        sqlite3* db_;
        sqlite3_stmt* stmt_ = nullptr;
        bool cached_ = false;
    };

    // The statements every call may run, each prepared on its first use
    // (under mutex_, as every use is) and kept for the connection's life:
    // preparing one costs more than running it.
    enum CachedStatement { kGet, kPut, kReplace, kAdd, kErase, kTake, kScan, kSweep, kCachedStatements };
    sqlite3_stmt* cached_[kCachedStatements] = {};
    Statement cached(CachedStatement which, const char* sql) { return Statement(db_, cached_[which], sql); }

    // An expired row is gone for every reader at once, but only a sweep
    // frees it: without one, keys written once and never read again (a
    // code never redeemed, a task never polled) would stay for good. At
    // most every kSweepEveryMs, from a write, a bounded batch through the
    // expiry index, so a write never waits on the whole table.
    static constexpr std::int64_t kSweepEveryMs = 1000;
    static constexpr int kSweepBatch = 500;
    void sweep() {
        const auto now = now_ms();
        if (now - swept_ms_ < kSweepEveryMs) return;
        swept_ms_ = now;
        // After the write it follows has landed: a sweep that fails (the
        // file busy past the timeout) is tried again later, never the
        // write's failure.
        try {
            Statement s = cached(kSweep, "DELETE FROM state WHERE key IN (SELECT key FROM state WHERE expires_ms > 0 "
                                         "AND expires_ms <= ? ORDER BY expires_ms LIMIT ?)");
            sqlite3_bind_int64(s.get(), 1, now);
            sqlite3_bind_int(s.get(), 2, kSweepBatch);
            s.step_done();
        } catch (const BackendError& e) {
            spdlog::warn("state database: expired entries not swept this time: {}", e.what());
        }
    }
    std::int64_t swept_ms_ = 0; // under mutex_

    static std::int64_t now_ms() {
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
    }
    static void bind_text(Statement& s, int index, std::string_view text) {
        sqlite3_bind_text(s.get(), index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    }
    static std::string column_text(Statement& s, int column) {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), column));
        return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s.get(), column))) : std::string();
    }
    void exec(const char* sql) {
        char* error = nullptr;
        if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
            std::string why = error ? error : "unknown error";
            sqlite3_free(error);
            throw BackendError(std::string("state database: ") + why);
        }
    }
    [[noreturn]] void fail(const char* what) {
        throw BackendError(std::string("state database ") + what + ": " + sqlite3_errmsg(db_));
    }

    sqlite3* db_ = nullptr;
    std::mutex mutex_;
};

} // namespace

void take_sqlite_pages_as_needed() {
    // No buffer and no slots: SQLITE_CONFIG_PAGECACHE with N = 0 turns off
    // the initial bulk allocation; SQLITE_MISUSE once SQLite is initialised.
    if (sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0) != SQLITE_OK)
        spdlog::debug("SQLite already started; its page cache keeps its initial bulk");
}

std::unique_ptr<StateBackend> make_sqlite_backend(const std::string& path) {
    return std::make_unique<SqliteBackend>(path);
}

} // namespace gatehouse::state
