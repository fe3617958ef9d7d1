// libpq, opened on first use. A host whose notes live in SQLite never maps it,
// nor the TLS, Kerberos, LDAP and GnuTLS libraries it pulls in: loading those
// was most of the memory family's start-up time and a good part of its
// resident size. The header is included for libpq's types only; nothing links
// against the library.
#pragma once

#include <libpq-fe.h>

namespace memory {

// The libpq functions the PostgreSQL backend calls.
struct Libpq {
    decltype(&::PQconnectdbParams) connectdb_params;
    decltype(&::PQstatus) status;
    decltype(&::PQerrorMessage) error_message;
    decltype(&::PQfinish) finish;
    decltype(&::PQsetNoticeReceiver) set_notice_receiver;
    decltype(&::PQtransactionStatus) transaction_status;
    decltype(&::PQserverVersion) server_version;
    decltype(&::PQconsumeInput) consume_input;
    decltype(&::PQisBusy) is_busy;
    decltype(&::PQprepare) prepare;
    decltype(&::PQexecPrepared) exec_prepared;
    decltype(&::PQexec) exec;
    decltype(&::PQresultStatus) result_status;
    decltype(&::PQresultErrorMessage) result_error_message;
    decltype(&::PQresultErrorField) result_error_field;
    decltype(&::PQclear) clear;
    decltype(&::PQntuples) ntuples;
    decltype(&::PQgetisnull) getisnull;
    decltype(&::PQgetvalue) getvalue;
    decltype(&::PQgetlength) getlength;
};

// The library's functions, opened on the first call (libpq.so.5, where the
// dynamic linker finds it) and kept open for the process's life. Throws
// NotesUnavailable saying what is missing when the library or one of its
// functions cannot be found; every later call says the same.
const Libpq& libpq();

} // namespace memory
