// The notes of every owner in one SQLite file: the logic behind remember,
// recall, forget and forget_all, free of any MCP type so it can be tested alone.
//
// Isolation: every statement is scoped to one owner row. Note numbers are per
// owner (an id says nothing about anybody else's notes), and recall ranks with
// the owner's own statistics (see recall()). What remains shared is time: a
// query for a word many other owners use takes longer, because FTS5 walks the
// whole posting list before the owner filter.
//
// Thread-safe: calls may come from many threads. Each takes a connection from
// a pool; writers queue on one mutex (SQLite has one writer at a time) while
// readers, in WAL mode, read their snapshot without waiting.
#pragma once

#include "sqlite_database.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace memory {

// Whose notes: the principal's owner key (opaque, from the host) and, inside
// a session, the store.
struct Owner {
    std::string principal;
    std::string store; // "" outside a session
};

struct NoteLimits {
    std::size_t max_text_bytes = 64 * 1024;
    std::size_t max_tags = 32;
    std::size_t max_tag_chars = 64;
    std::size_t max_query_words = 32;
    int default_recall = 10;
    int max_recall = 50;
};

struct StoreSettings {
    std::string database_path;
    Synchronous synchronous = Synchronous::normal;
    Stemming stemming; // English for Latin words, Russian for Cyrillic ones
    NoteLimits limits;
};

struct NewNote {
    std::string text;
    std::vector<std::string> tags;
    bool critical = false;
};

struct Note {
    int64_t id = 0; // the owner's note number
    std::string text;
    std::vector<std::string> tags;
    bool critical = false;
    int64_t created_ms = 0; // Unix time, milliseconds
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
    // text, a card number, or bad tags.
    int64_t remember(const Owner& owner, const NewNote& note);

    // Words match the text or a tag, by their exact folded form or by their
    // stem (any word; more matching words rank higher, an exact form above a
    // stem). Ranked by BM25 computed over this owner's notes only, then by
    // recency (recall_ranking.hpp). Critical notes returned are marked read for this owner.
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

    // Reads the whole database and reports what disagrees: SQLite's own
    // integrity check, the index against the notes, each owner's note and
    // term counts against the notes. Empty when all is well. For operators
    // (`gatehouse notes check`): the index needs this plugin's tokenizer, so
    // the sqlite3 shell cannot check it.
    struct CheckReport {
        int64_t owners = 0;
        int64_t notes = 0;
        std::vector<std::string> problems;
    };
    CheckReport check();

    const NoteLimits& limits() const { return settings_.limits; }
    int schema_version();

private:
    class ConnectionPool;
    std::vector<Note> latest(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& tag_keys,
                             bool critical_only, int limit);
    std::vector<Note> search(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& words,
                             const std::vector<std::string>& tag_keys, bool critical_only, int limit);
    void mark_critical_read(SqliteDatabase& db, int64_t owner_id, const std::vector<Note>& notes);

    StoreSettings settings_;
    std::unique_ptr<ConnectionPool> pool_;
    std::mutex write_mutex_;
};

} // namespace memory
