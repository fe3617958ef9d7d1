// One libpq connection with its prepared statements, used by one thread at a
// time (ObjectPool hands it out). Every statement is sent with its values as
// parameters, never spliced into the SQL.
#pragma once

#include "libpq_library.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memory {

// PostgreSQL refused a statement (not a lost connection): an operator's or
// this plugin's problem, logged, never shown to the agent verbatim.
class PostgresError : public std::runtime_error {
public:
    PostgresError(const std::string& what, std::string sqlstate)
        : std::runtime_error(what), sqlstate_(std::move(sqlstate)) {}
    const std::string& sqlstate() const { return sqlstate_; }

private:
    std::string sqlstate_;
};

// The URL with any password replaced by ***, for the log.
std::string redacted_postgres_url(const std::string& url);

class PgResult {
public:
    explicit PgResult(PGresult* result) : result_(result, &release) {}
    int rows() const { return libpq().ntuples(result_.get()); }
    bool null(int row, int column) const { return libpq().getisnull(result_.get(), row, column) != 0; }
    std::string text(int row, int column) const { return std::string(view(row, column)); }
    // The value in place: valid while this result lives.
    std::string_view view(int row, int column) const {
        return {libpq().getvalue(result_.get(), row, column),
                static_cast<std::size_t>(libpq().getlength(result_.get(), row, column))};
    }
    int64_t integer(int row, int column) const;
    bool boolean(int row, int column) const { return libpq().getvalue(result_.get(), row, column)[0] == 't'; }

private:
    static void release(PGresult* result) { libpq().clear(result); }
    std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
};

// A statement's parameters, as text (PostgreSQL casts them by the SQL's
// placeholders: $1::bigint, $2::text[]).
class PgParams {
public:
    PgParams& add(std::string_view text);
    PgParams& add(int64_t value) { return add(std::to_string(value)); }
    PgParams& add(bool value) { return add(std::string_view(value ? "t" : "f")); }
    // A text[] literal: {"a","b"}, each element quoted.
    PgParams& add_array(const std::vector<std::string>& values);
    PgParams& add_array(const std::vector<int64_t>& values);
    std::vector<const char*> pointers() const;
    std::size_t size() const { return values_.size(); }

private:
    std::vector<std::string> values_;
};

class PgConnection {
public:
    // Throws NotesUnavailable when the server cannot be reached.
    explicit PgConnection(const std::string& url);
    ~PgConnection();
    PgConnection(const PgConnection&) = delete;
    PgConnection& operator=(const PgConnection&) = delete;

    // Runs a statement, prepared once per connection. Throws NotesUnavailable
    // when the connection is lost, PostgresError when the server refuses it.
    PgResult run(const std::string& sql, const PgParams& params = {});
    // Runs SQL text with no parameters (several statements allowed).
    void exec(const std::string& sql);
    // False once the connection is lost or a transaction was left open: the
    // pool drops it.
    bool reusable() const;
    // Reads what the server sent while the connection sat idle: false when
    // it has closed the connection. No round trip.
    bool alive();
    // The server's version as server_version_num (e.g. 150004), which it
    // sent when the connection was made: no round trip.
    int server_version() const { return libpq().server_version(conn_); }
    void set_in_transaction(bool open) { in_transaction_ = open; }

private:
    [[noreturn]] void fail(PGresult* result, const std::string& doing);
    static void on_notice(void* self, const PGresult* notice);
    PGconn* conn_ = nullptr;
    bool lost_ = false;                                     // the server said FATAL while the connection sat idle
    std::unordered_map<std::string, std::string> prepared_; // SQL -> statement name
    bool in_transaction_ = false;
};

// BEGIN .. COMMIT, rolled back when the scope is left by an exception.
class PgTransaction {
public:
    explicit PgTransaction(PgConnection& conn);
    ~PgTransaction();
    void commit();

private:
    PgConnection& conn_;
    bool open_ = true;
};

} // namespace memory
