// Where notes are kept: one SQLite file (sqlite_notes) or a PostgreSQL
// database several hosts share (postgres_notes). NoteStore checks every
// argument and cuts every text into terms before a backend sees it, and both
// rank with recall_ranking, so an agent cannot tell the two apart.
#pragma once

#include "recall_ranking.hpp"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace memory {

class TermAnalyzer;

// Whose notes: the principal's owner key (opaque, from the host) and, inside
// a session, the store.
struct Owner {
    std::string principal;
    std::string store; // "" outside a session
};

struct Note {
    int64_t id = 0; // the owner's note number
    std::string text;
    std::vector<std::string> tags;
    bool critical = false;
    int64_t created_ms = 0; // Unix time, milliseconds
};

// A note as NoteStore passed it: checked, its tags folded into keys, its
// length and terms counted.
struct CheckedNote {
    std::string text;
    std::string tags_json;             // the tags as given, a JSON array
    std::vector<std::string> tag_keys; // folded, distinct
    bool critical = false;
    int64_t created_ms = 0;
    int64_t tokens = 0;                                  // exact words of text and tags
    std::vector<std::pair<std::string, uint32_t>> terms; // each distinct term and its hits, sorted
};

struct CheckedQuery {
    std::vector<QueryPhrase> phrases; // empty: the latest notes
    std::size_t words = 0;
    std::vector<std::string> tag_keys;
    bool critical_only = false;
    int limit = 10;
};

struct CheckReport {
    int64_t owners = 0;
    int64_t notes = 0;
    std::vector<std::string> problems;
};

// The backend cannot be reached (PostgreSQL down, a connection lost): the
// agent is told to try again; the backend reconnects by itself.
class NotesUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class NoteBackend {
public:
    virtual ~NoteBackend() = default;

    // Returns the note's number (per owner, never reused).
    virtual int64_t remember(const Owner& owner, const CheckedNote& note) = 0;
    // The best `limit` notes for the phrases (or the latest), critical ones
    // among them marked read for the owner.
    virtual std::vector<Note> recall(const Owner& owner, const CheckedQuery& query) = 0;
    virtual bool forget(const Owner& owner, int64_t number) = 0;
    virtual int64_t forget_all(const Owner& owner) = 0;
    virtual std::vector<int64_t> unread_critical(const Owner& owner) = 0;
    virtual std::vector<Note> critical_notes(const Owner& owner) = 0;
    virtual CheckReport check() = 0;
    virtual int schema_version() = 0;
};

// For the backends' check(): counts the notes imply, compared with the counts
// stored. wrong() is how many stored counts differ from what the notes give,
// plus how many the notes give that nothing stores.
template <class Key> class CountAudit {
public:
    int64_t& expect(const Key& key) { return expected_[key]; }
    void stored(const Key& key, int64_t value) {
        auto it = expected_.find(key);
        if ((it == expected_.end() ? 0 : it->second) != value) ++wrong_;
        if (it != expected_.end()) expected_.erase(it);
    }
    std::size_t wrong() const { return wrong_ + expected_.size(); }

private:
    std::map<Key, int64_t> expected_;
    std::size_t wrong_ = 0;
};

// (owner or note row, term)
using TermKey = std::pair<int64_t, std::string>;

// The check's sentence for owners' term counts that disagree with the notes.
inline std::string term_counts_problem(std::size_t wrong) {
    return std::to_string(wrong) + " of the owners' term counts disagree with their notes (recall ranks by them)";
}

} // namespace memory
