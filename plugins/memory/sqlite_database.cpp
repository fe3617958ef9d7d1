#include "sqlite_database.hpp"

#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace memory {

namespace {

[[noreturn]] void fail(sqlite3* db, int code, const std::string& doing) {
    throw SqliteError(code, doing + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(code)));
}

// note_term_counts(notes_fts) -> blob of uint32: [hits of phrase 0, hits of
// phrase 1, ...]. Recall scores rows itself from these, with the owner's own
// statistics, instead of FTS5's bm25(), whose IDF counts every owner's notes.
// The row's length is notes.token_count (counted by the same tokenizer at
// remember): asking FTS5 (xColumnSize) would cost a lookup in its docsize
// table for every candidate.
void note_term_counts(const Fts5ExtensionApi* x, Fts5Context* fts, sqlite3_context* out, int, sqlite3_value**) {
    const int phrases = x->xPhraseCount(fts);
    uint32_t stack[64] = {}; // a query has at most 32 words, each exact and stemmed
    std::vector<uint32_t> heap;
    uint32_t* counts = stack;
    if (phrases > 64) {
        // Called from SQLite's C code: an allocation failure is its error, not an unwinding.
        try {
            heap.assign(static_cast<std::size_t>(phrases), 0);
        } catch (const std::bad_alloc&) {
            sqlite3_result_error_nomem(out);
            return;
        }
        counts = heap.data();
    }
    int instances = 0;
    if (x->xInstCount(fts, &instances) != SQLITE_OK) {
        sqlite3_result_error(out, "note_term_counts: no instances", -1);
        return;
    }
    for (int i = 0; i < instances; ++i) {
        int phrase = 0, column = 0, offset = 0;
        if (x->xInst(fts, i, &phrase, &column, &offset) == SQLITE_OK && phrase >= 0 && phrase < phrases)
            ++counts[phrase];
    }
    sqlite3_result_blob(out, counts, static_cast<int>(static_cast<std::size_t>(phrases) * sizeof(uint32_t)),
                        SQLITE_TRANSIENT);
}

} // namespace

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
    const int rc =
        sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, "prepare");
}

Statement::~Statement() {
    sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, int64_t value) {
    const int rc = sqlite3_bind_int64(stmt_, index, value);
    if (rc != SQLITE_OK) fail(db_, rc, "bind");
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    const int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) fail(db_, rc, "bind");
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, "step");
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

int64_t Statement::integer(int column) const {
    return sqlite3_column_int64(stmt_, column);
}

std::string Statement::text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    const int n = sqlite3_column_bytes(stmt_, column);
    return p ? std::string(p, static_cast<std::size_t>(n)) : std::string();
}

std::vector<uint32_t> Statement::uint32_blob(int column) const {
    const void* p = sqlite3_column_blob(stmt_, column);
    const int n = sqlite3_column_bytes(stmt_, column);
    std::vector<uint32_t> out(static_cast<std::size_t>(n) / sizeof(uint32_t));
    if (p && !out.empty()) std::memcpy(out.data(), p, out.size() * sizeof(uint32_t));
    return out;
}

SqliteDatabase::SqliteDatabase(const std::string& path, Synchronous synchronous, const Stemming& stemming) {
    // Made here, the notes file is its user's alone (SQLite gives its -wal
    // and -shm files its mode); an in-memory database has no file.
    if (!path.empty() && path != ":memory:" && path.rfind("file:", 0) != 0)
        if (const int made = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            made >= 0)
            ::close(made);
    const int rc =
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw SqliteError(rc, "cannot open " + path + ": " + why);
    }
    try {
        // Another process on the same file (a second host) waits instead of
        // failing; inside this process writers queue on NoteStore's mutex.
        sqlite3_busy_timeout(db_, 5000);
        switch_to_wal();
        exec(synchronous == Synchronous::full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
        exec("PRAGMA foreign_keys = ON");
        // Recall reads a few hundred scattered rows (one per candidate note).
        // Through the default 2 MB page cache most are misses, each a pread
        // system call and a copy, which was most of recall's time at 100 000
        // notes. Mapped, the file is read in place from the OS page cache,
        // shared by every connection. Address space only, not memory.
        exec("PRAGMA mmap_size = 1073741824");
        fts5_api* api = fts5_api_of(db_);
        analyzer_ = std::make_unique<TermAnalyzer>(api, stemming);
        register_note_tokenizer(api);
        if (api->xCreateFunction(api, "note_term_counts", nullptr, &note_term_counts, nullptr) != SQLITE_OK)
            throw SqliteError(SQLITE_ERROR, "cannot register note_term_counts");
    } catch (...) {
        statements_.clear();
        analyzer_.reset();
        sqlite3_close(db_);
        throw;
    }
}

// WAL is remembered by the file, so only a connection that finds another
// mode switches it. The switch needs the file to itself, and SQLite answers
// "database is locked" at once instead of waiting on the busy timeout: two
// hosts starting on one new file, or the pool's connections opened side by
// side, would fail their start. So the switch is tried again, within the
// same five seconds a busy statement waits.
void SqliteDatabase::switch_to_wal() {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
        {
            Statement mode(db_, "PRAGMA journal_mode");
            if (mode.step() && mode.text(0) == "wal") return;
        }
        try {
            exec("PRAGMA journal_mode = WAL");
            return;
        } catch (const SqliteError& e) {
            if ((e.code() & 0xff) != SQLITE_BUSY && (e.code() & 0xff) != SQLITE_LOCKED) throw;
            if (std::chrono::steady_clock::now() >= give_up) throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

SqliteDatabase::~SqliteDatabase() {
    statements_.clear();
    analyzer_.reset();
    sqlite3_close(db_);
}

void SqliteDatabase::exec(const char* sql) {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
    if (rc != SQLITE_OK) {
        std::string why = message ? message : sqlite3_errstr(rc);
        sqlite3_free(message);
        throw SqliteError(rc, std::string(sql).substr(0, 60) + ": " + why);
    }
}

Statement& SqliteDatabase::statement(const std::string& sql) {
    auto& slot = statements_[sql];
    if (!slot) slot = std::make_unique<Statement>(db_, sql);
    slot->reset();
    return *slot;
}

void SqliteDatabase::reset_statements() {
    for (auto& [sql, statement] : statements_)
        statement->reset();
}

Transaction::Transaction(SqliteDatabase& db, Kind kind) : db_(db) {
    // IMMEDIATE takes the write lock up front: a deferred transaction that
    // upgrades later gets SQLITE_BUSY in WAL without waiting.
    db_.exec(kind == Kind::write ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction() {
    if (!open_) return;
    db_.reset_statements();
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    db_.reset_statements();
    db_.exec("COMMIT");
    open_ = false;
}

} // namespace memory
