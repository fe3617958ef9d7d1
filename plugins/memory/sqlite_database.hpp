// One SQLite connection with its cached statements, its term analyzer (the
// same folding and stemming the index's "gatehouse" tokenizer, registered
// here, applies) and the auxiliary function recall ranks with. A connection is used
// by one thread at a time (ConnectionPool hands it out), never shared.
#pragma once

#include "term_analyzer.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memory {

// A failure of SQLite itself (disk full, corrupt file, busy past the timeout):
// an operator's problem, logged, never shown to the agent verbatim.
class SqliteError : public std::runtime_error {
public:
    SqliteError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    int code() const { return code_; }

private:
    int code_;
};

class Statement {
public:
    Statement(sqlite3* db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, int64_t value);
    Statement& bind(int index, std::string_view text);
    // Runs one step; true while a row is ready.
    bool step();
    void reset();

    int64_t integer(int column) const;
    std::string text(int column) const;
    std::vector<uint32_t> uint32_blob(int column) const;

private:
    sqlite3* db_;
    sqlite3_stmt* stmt_ = nullptr;
};

enum class Synchronous { normal, full };

class SqliteDatabase {
public:
    SqliteDatabase(const std::string& path, Synchronous synchronous, const Stemming& stemming);
    ~SqliteDatabase();
    SqliteDatabase(const SqliteDatabase&) = delete;
    SqliteDatabase& operator=(const SqliteDatabase&) = delete;

    void exec(const char* sql);
    // A prepared statement kept for the life of the connection, reset and
    // unbound before it is handed out again.
    Statement& statement(const std::string& sql);
    // Resets every cached statement, so none keeps a read snapshot alive
    // past the end of its transaction.
    void reset_statements();
    const TermAnalyzer& analyzer() const { return *analyzer_; }
    sqlite3* handle() const { return db_; }

private:
    void switch_to_wal();
    sqlite3* db_ = nullptr;
    std::unordered_map<std::string, std::unique_ptr<Statement>> statements_;
    std::unique_ptr<TermAnalyzer> analyzer_;
};

// Every statement of a transaction goes through this guard: it commits only
// when told, and rolls back if the scope is left by an exception.
class Transaction {
public:
    enum class Kind { read, write };
    Transaction(SqliteDatabase& db, Kind kind);
    ~Transaction();
    void commit();

private:
    SqliteDatabase& db_;
    bool open_ = true;
};

} // namespace memory
