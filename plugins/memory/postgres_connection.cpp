#include "postgres_connection.hpp"

#include "note_backend.hpp"

#include <charconv>
#include <stdexcept>

namespace memory {

std::string redacted_postgres_url(const std::string& url) {
    // scheme://user:password@host/... : the password is what lies between
    // the first ':' after the scheme and the '@'.
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) return url;
    const auto at = url.find('@', scheme_end + 3);
    if (at == std::string::npos) return url;
    const auto colon = url.find(':', scheme_end + 3);
    if (colon == std::string::npos || colon > at) return url;
    return url.substr(0, colon + 1) + "***" + url.substr(at);
}

int64_t PgResult::integer(int row, int column) const {
    const char* value = libpq().getvalue(result_.get(), row, column);
    const int length = libpq().getlength(result_.get(), row, column);
    int64_t out = 0;
    std::from_chars(value, value + length, out);
    return out;
}

namespace {

// libpq reads a text parameter up to its first NUL whatever its length, so
// "owner\0x" would be sent as "owner": refused, never cut.
void refuse_nul(std::string_view text) {
    if (text.find('\0') != std::string_view::npos)
        throw std::invalid_argument("a value sent to PostgreSQL holds a NUL byte, which a text parameter cannot carry");
}

} // namespace

PgParams& PgParams::add(std::string_view text) {
    refuse_nul(text);
    values_.emplace_back(text);
    return *this;
}

PgParams& PgParams::add_array(const std::vector<std::string>& values) {
    std::string literal = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        refuse_nul(values[i]);
        if (i) literal += ',';
        literal += '"';
        for (char c : values[i]) {
            if (c == '"' || c == '\\') literal += '\\';
            literal += c;
        }
        literal += '"';
    }
    literal += '}';
    values_.push_back(std::move(literal));
    return *this;
}

PgParams& PgParams::add_array(const std::vector<int64_t>& values) {
    std::string literal = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i) literal += ',';
        literal += std::to_string(values[i]);
    }
    literal += '}';
    values_.push_back(std::move(literal));
    return *this;
}

std::vector<const char*> PgParams::pointers() const {
    std::vector<const char*> out;
    for (const auto& v : values_)
        out.push_back(v.c_str());
    return out;
}

PgConnection::PgConnection(const std::string& url) {
    // Ours first, so the URL's own connect_timeout or application_name win.
    const char* keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {"5", "gatehouse-memory", url.c_str(), nullptr};
    conn_ = libpq().connectdb_params(keywords, values, 1);
    if (!conn_ || libpq().status(conn_) != CONNECTION_OK) {
        std::string why = conn_ ? libpq().error_message(conn_) : "out of memory";
        libpq().finish(conn_);
        conn_ = nullptr;
        while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
            why.pop_back();
        throw NotesUnavailable("cannot connect to PostgreSQL at " + redacted_postgres_url(url) + ": " + why);
    }
    libpq().set_notice_receiver(conn_, &PgConnection::on_notice, this);
    // Every acknowledged note is committed on the server's disk, whatever
    // the server's own default; no statement holds a connection forever.
    // The statements are prepared once and their best plan does not depend
    // on the values (primary-key ranges of one owner), so they are planned
    // once too, instead of again on every call.
    // A constructor that throws runs no destructor: the connection is
    // closed here, or every failed setup would keep one of the server's.
    try {
        exec("SET synchronous_commit = on; SET statement_timeout = '30s'; SET client_min_messages = warning; "
             "SET plan_cache_mode = force_generic_plan");
    } catch (...) {
        libpq().finish(conn_);
        conn_ = nullptr;
        throw;
    }
}

PgConnection::~PgConnection() {
    libpq().finish(conn_);
}

bool PgConnection::reusable() const {
    return conn_ && !lost_ && libpq().status(conn_) == CONNECTION_OK && !in_transaction_ &&
           libpq().transaction_status(conn_) == PQTRANS_IDLE;
}

// A server that shuts down or restarts tells its idle connections
// ("terminating connection due to administrator command", FATAL) before it
// closes them; libpq hands that over as a notice. Other notices are the
// server's chatter for a human and are dropped.
void PgConnection::on_notice(void* self, const PGresult* notice) {
    const char* severity = libpq().result_error_field(notice, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity && (std::string_view(severity) == "FATAL" || std::string_view(severity) == "PANIC"))
        static_cast<PgConnection*>(self)->lost_ = true;
}

bool PgConnection::alive() {
    if (!conn_ || libpq().consume_input(conn_) != 1) return false;
    libpq().is_busy(conn_); // parses what was read, so a FATAL notice reaches on_notice
    return !lost_ && libpq().status(conn_) == CONNECTION_OK;
}

void PgConnection::fail(PGresult* result, const std::string& doing) {
    std::string why = result ? libpq().result_error_message(result) : libpq().error_message(conn_);
    const char* state = result ? libpq().result_error_field(result, PG_DIAG_SQLSTATE) : nullptr;
    std::string sqlstate = state ? state : "";
    libpq().clear(result);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
        why.pop_back();
    // Class 08 is a connection exception; 57P01..57P03 an administrator's
    // shutdown or a server that cannot take connections now.
    if (libpq().status(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P0", 0) == 0)
        throw NotesUnavailable("PostgreSQL connection lost (" + doing + "): " + why);
    throw PostgresError(doing + ": " + why, sqlstate);
}

PgResult PgConnection::run(const std::string& sql, const PgParams& params) {
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
        const std::string name = "s" + std::to_string(prepared_.size());
        PGresult* prepared =
            libpq().prepare(conn_, name.c_str(), sql.c_str(), static_cast<int>(params.size()), nullptr);
        if (!prepared || libpq().result_status(prepared) != PGRES_COMMAND_OK)
            fail(prepared, "prepare " + sql.substr(0, 60));
        libpq().clear(prepared);
        it = prepared_.emplace(sql, name).first;
    }
    const auto values = params.pointers();
    PGresult* result = libpq().exec_prepared(conn_, it->second.c_str(), static_cast<int>(values.size()), values.data(),
                                             nullptr, nullptr, 0);
    const auto status = result ? libpq().result_status(result) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(result, sql.substr(0, 60));
    return PgResult(result);
}

void PgConnection::exec(const std::string& sql) {
    PGresult* result = libpq().exec(conn_, sql.c_str());
    const auto status = result ? libpq().result_status(result) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(result, sql.substr(0, 60));
    libpq().clear(result);
}

PgTransaction::PgTransaction(PgConnection& conn) : conn_(conn) {
    // Named, not left to the server's default_transaction_isolation: the
    // migration's lock and the writes are written for READ COMMITTED (a
    // snapshot taken before the lock would read the schema as it was).
    conn_.exec("BEGIN ISOLATION LEVEL READ COMMITTED");
    conn_.set_in_transaction(true);
}

PgTransaction::~PgTransaction() {
    if (!open_) return;
    try {
        conn_.exec("ROLLBACK");
        conn_.set_in_transaction(false);
    } catch (...) {
        // The connection stays marked: the pool drops it.
    }
}

void PgTransaction::commit() {
    conn_.exec("COMMIT");
    conn_.set_in_transaction(false);
    open_ = false;
}

} // namespace memory
