// The notes of every owner: the logic behind remember, recall, forget and
// forget_all, free of any MCP type so it can be tested alone. Every argument
// is checked here and every text cut into terms here (TermAnalyzer), then
// kept by a backend: one SQLite file (the default) or a PostgreSQL database
// several hosts share (`postgresql://` URL), see note_backend.hpp.
//
// Isolation: every statement of either backend is scoped to one owner. Note
// numbers are per owner (an id says nothing about anybody else's notes), and
// recall ranks with the owner's own statistics (recall_ranking.hpp).
//
// Thread-safe: calls may come from many threads; each takes an analyzer and
// a connection from pools.
#pragma once

#include "note_backend.hpp"
#include "object_pool.hpp"
#include "sqlite_database.hpp"
#include "term_analyzer.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace memory {

struct NoteLimits {
    std::size_t max_text_bytes = 64 * 1024;
    std::size_t max_tags = 32;
    std::size_t max_tag_chars = 64;
    std::size_t max_query_words = 32;
    int default_recall = 10;
    int max_recall = 50;
};

struct StoreSettings {
    // A file path (SQLite) or a postgresql:// / postgres:// connection URL.
    std::string database_path;
    Synchronous synchronous = Synchronous::normal; // SQLite only; PostgreSQL always commits synchronously
    Stemming stemming;                             // English for Latin words, Russian for Cyrillic ones
    NoteLimits limits;
};

// True for a PostgreSQL connection URL.
bool is_postgres_url(const std::string& database);

struct NewNote {
    std::string text;
    std::vector<std::string> tags;
    bool critical = false;
};

struct RecallQuery {
    std::string query;             // empty: the latest notes
    std::vector<std::string> tags; // every one must be on the note
    int limit = 0;                 // 0: the default; capped at NoteLimits::max_recall
    bool critical_only = false;    // only notes flagged critical
};

// The caller's arguments are not acceptable; what() is the sentence for the agent.
class NoteRejected : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The text holds what looks like a payment card number: refused by rule, not
// for a malformed argument. last4() names it without repeating it.
class CardNumberInNote : public NoteRejected {
public:
    CardNumberInNote(const std::string& message, std::string last4) : NoteRejected(message), last4_(std::move(last4)) {}
    const std::string& last4() const { return last4_; }

private:
    std::string last4_;
};

class NoteStore {
public:
    explicit NoteStore(StoreSettings settings);
    ~NoteStore();
    NoteStore(const NoteStore&) = delete;
    NoteStore& operator=(const NoteStore&) = delete;

    // Returns the new note's number. Throws NoteRejected for empty or oversized
    // text, a card number, or bad tags; NotesUnavailable when the database
    // cannot be reached.
    int64_t remember(const Owner& owner, const NewNote& note);

    // Words match the text or a tag, by their exact folded form or by their
    // stem (any word; more matching words rank higher, an exact form above a
    // stem). Ranked by BM25 computed over this owner's notes only, then by
    // recency (recall_ranking.hpp). Critical notes returned are marked read
    // for this owner.
    std::vector<Note> recall(const Owner& owner, const RecallQuery& query);

    // False when this owner has no note with that number.
    bool forget(const Owner& owner, int64_t id);

    // Returns how many notes were deleted. Numbers are not reused afterwards.
    int64_t forget_all(const Owner& owner);

    // For the gate: the owner's critical note numbers that recall has not yet
    // returned to this owner.
    std::vector<int64_t> unread_critical(const Owner& owner);
    // All of the owner's critical notes, read or not, oldest first.
    std::vector<Note> critical_notes(const Owner& owner);

    // Reads the whole database and reports what disagrees: the database's
    // own checks, the index against the notes, each owner's note and term
    // counts against the notes. No problems when all is well. For operators
    // (`gatehouse notes check`): the SQLite index needs this plugin's
    // tokenizer, so the sqlite3 shell cannot check it.
    CheckReport check() { return backend_->check(); }

    const NoteLimits& limits() const { return settings_.limits; }
    int schema_version() { return backend_->schema_version(); }
    // "sqlite" or "postgresql", for the log.
    const char* backend_name() const;

private:
    StoreSettings settings_;
    ObjectPool<StandaloneAnalyzer> analyzers_;
    std::unique_ptr<NoteBackend> backend_;
};

} // namespace memory
