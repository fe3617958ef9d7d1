#include "libpq_library.hpp"

#include "library_symbols.hpp"
#include "note_backend.hpp"

#include <dlfcn.h>

#include <string>

namespace memory {

namespace {

// What opening the library gave: the table, or why there is none.
struct Opened {
    Libpq table{};
    std::string problem;
};

constexpr const char* kLibrary = "libpq.so.5";

Opened open_libpq() {
    Opened out;
    // Never closed: connections of a pool may outlive any one caller, and the
    // library's own state (SSL, Kerberos) is process-wide anyway.
    void* library = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char* why = ::dlerror();
        out.problem = std::string("the PostgreSQL client library cannot be opened (") + (why ? why : kLibrary) +
                      "); install libpq5 to keep notes in PostgreSQL";
        return out;
    }
    auto bind = [&](auto& function, const char* name) {
        bind_symbol(library, kLibrary, function, name, out.problem, "the installed libpq is too old");
    };
    auto& t = out.table;
    bind(t.connectdb_params, "PQconnectdbParams");
    bind(t.status, "PQstatus");
    bind(t.error_message, "PQerrorMessage");
    bind(t.finish, "PQfinish");
    bind(t.set_notice_receiver, "PQsetNoticeReceiver");
    bind(t.transaction_status, "PQtransactionStatus");
    bind(t.server_version, "PQserverVersion");
    bind(t.consume_input, "PQconsumeInput");
    bind(t.is_busy, "PQisBusy");
    bind(t.prepare, "PQprepare");
    bind(t.exec_prepared, "PQexecPrepared");
    bind(t.exec, "PQexec");
    bind(t.result_status, "PQresultStatus");
    bind(t.result_error_message, "PQresultErrorMessage");
    bind(t.result_error_field, "PQresultErrorField");
    bind(t.clear, "PQclear");
    bind(t.ntuples, "PQntuples");
    bind(t.getisnull, "PQgetisnull");
    bind(t.getvalue, "PQgetvalue");
    bind(t.getlength, "PQgetlength");
    return out;
}

} // namespace

const Libpq& libpq() {
    static const Opened opened = open_libpq(); // once, thread-safe
    if (!opened.problem.empty()) throw NotesUnavailable(opened.problem);
    return opened.table;
}

} // namespace memory
