#include "note_store.hpp"

#include "card_number_guard.hpp"
#include "recall_ranking.hpp"
#include "schema_migrations.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <unordered_map>

namespace memory {

// Connections are made on demand and kept: at most one per thread that has
// ever called at the same time (the host's worker count), each with its own
// statements and tokenizer.
class NoteStore::ConnectionPool {
public:
    explicit ConnectionPool(const StoreSettings& settings) : settings_(settings) {}

    class Lease {
    public:
        Lease(ConnectionPool& pool, std::unique_ptr<SqliteDatabase> db) : pool_(pool), db_(std::move(db)) {}
        ~Lease() { pool_.give_back(std::move(db_)); }
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        SqliteDatabase& operator*() const { return *db_; }

    private:
        ConnectionPool& pool_;
        std::unique_ptr<SqliteDatabase> db_;
    };

    Lease acquire() {
        {
            std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                auto db = std::move(idle_.back());
                idle_.pop_back();
                return Lease(*this, std::move(db));
            }
        }
        return Lease(*this, std::make_unique<SqliteDatabase>(settings_.database_path, settings_.synchronous,
                                                             settings_.stemming));
    }

private:
    void give_back(std::unique_ptr<SqliteDatabase> db) {
        if (!db) return;
        std::lock_guard lock(mutex_);
        idle_.push_back(std::move(db));
    }

    const StoreSettings& settings_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<SqliteDatabase>> idle_;
};

namespace {

using Json = nlohmann::json;

bool is_space_only(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ++i;
        } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xA0) {
            i += 2; // no-break space
        } else if (c == 0xE3 && text.substr(i, 3) == "\xE3\x80\x80") {
            i += 3; // ideographic space
        } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                   static_cast<unsigned char>(text[i + 2]) <= 0x8B) {
            i += 3; // en quad .. zero-width space
        } else {
            return false;
        }
    }
    return true;
}

std::string trim(std::string_view s) {
    const char* ws = " \t\n\r\f\v";
    const auto first = s.find_first_not_of(ws);
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(ws);
    return std::string(s.substr(first, last - first + 1));
}

std::size_t utf8_chars(std::string_view s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
    std::string out;
    for (const auto& p : parts) {
        if (!out.empty()) out += separator;
        out += p;
    }
    return out;
}

// A tag is compared by its folded tokens, so "Договор", "договор" and
// "ДОГОВОР " are one tag; a tag with no word characters keeps its own text.
std::string tag_key(const TermAnalyzer& analyzer, const std::string& tag) {
    auto key = join(analyzer.words(tag), " ");
    return key.empty() ? tag : key;
}

struct CheckedTag {
    std::string shown;
    std::string key;
};

std::vector<CheckedTag> check_tags(const TermAnalyzer& analyzer, const std::vector<std::string>& tags,
                                   const NoteLimits& limits, const char* where) {
    if (tags.size() > limits.max_tags)
        throw NoteRejected(std::string(where) + " gives " + std::to_string(tags.size()) + " tags; at most " +
                           std::to_string(limits.max_tags) + " are allowed. Keep the few that matter.");
    std::vector<CheckedTag> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < tags.size(); ++i) {
        const std::string tag = trim(tags[i]);
        const std::string which = "Tag #" + std::to_string(i + 1);
        if (tag.empty() || is_space_only(tag)) throw NoteRejected(which + " is empty; give each tag a word or two.");
        if (utf8_chars(tag) > limits.max_tag_chars)
            throw NoteRejected(which + " is " + std::to_string(utf8_chars(tag)) +
                               " characters long; a tag is at most " + std::to_string(limits.max_tag_chars) +
                               " characters.");
        for (char c : tag)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                throw NoteRejected(which + " holds a control character (a line break, a tab); use plain words.");
        CheckedTag checked{tag, tag_key(analyzer, tag)};
        if (seen.insert(checked.key).second) out.push_back(std::move(checked));
    }
    return out;
}

Note read_note(const Statement& s) {
    // Columns: number, text, tags, critical, created_ms.
    Note n;
    n.id = s.integer(0);
    n.text = s.text(1);
    n.tags = Json::parse(s.text(2)).get<std::vector<std::string>>();
    n.critical = s.integer(3) != 0;
    n.created_ms = s.integer(4);
    return n;
}

constexpr const char* kNoteColumns = "n.number, n.text, n.tags, n.critical, n.created_ms";

// The owner's row id, or 0 when the owner has never written.
int64_t find_owner(SqliteDatabase& db, const Owner& owner) {
    auto& s = db.statement("SELECT id FROM owners WHERE subject = ?1 AND store = ?2");
    s.bind(1, owner.principal).bind(2, owner.store);
    return s.step() ? s.integer(0) : 0;
}

// A note's terms join or leave its owner's document frequencies.
void count_terms(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& terms, int delta) {
    auto& add = db.statement("INSERT INTO owner_terms (owner_id, term, notes) VALUES (?1, ?2, ?3) "
                             "ON CONFLICT (owner_id, term) DO UPDATE SET notes = notes + ?3");
    for (const auto& term : terms) {
        add.bind(1, owner_id).bind(2, term).bind(3, int64_t{delta});
        add.step();
        add.reset();
    }
    if (delta < 0)
        for (const auto& term : terms)
            db.statement("DELETE FROM owner_terms WHERE owner_id = ?1 AND term = ?2 AND notes <= 0")
                .bind(1, owner_id)
                .bind(2, term)
                .step();
}

// The MATCH expression for some of the phrases: each one quoted, so nothing
// of the query is FTS5 syntax.
std::string match_expression(const std::vector<QueryPhrase>& phrases, const std::vector<std::size_t>& which) {
    std::string match;
    for (auto p : which) {
        if (!match.empty()) match += " OR ";
        match += '"';
        for (char c : phrases[p].term)
            match += c == '"' ? std::string("\"\"") : std::string(1, c);
        match += '"';
    }
    return match;
}

} // namespace

NoteStore::NoteStore(StoreSettings settings)
    : settings_(std::move(settings)), pool_(std::make_unique<ConnectionPool>(settings_)) {
    auto db = pool_->acquire();
    std::lock_guard lock(write_mutex_);
    migrate_schema(*db);
}

NoteStore::~NoteStore() = default;

int NoteStore::schema_version() {
    auto db = pool_->acquire();
    return memory::schema_version(*db);
}

int64_t NoteStore::remember(const Owner& owner, const NewNote& note) {
    const auto& limits = settings_.limits;
    if (note.text.size() > limits.max_text_bytes)
        throw NoteRejected("The note is " + std::to_string(note.text.size()) +
                           " bytes; this server keeps notes of up to " + std::to_string(limits.max_text_bytes) +
                           " bytes (settings.max_text_bytes). Shorten it or split it into several notes.");
    if (is_space_only(note.text)) throw NoteRejected("The note is empty; give remember the text to keep.");
    if (auto last4 = find_card_number(note.text))
        throw CardNumberInNote("The note seems to hold a payment card number (one ending in " + *last4 +
                                   "); notes must not keep card numbers. Remove it and call remember again.",
                               *last4);

    auto db = pool_->acquire();
    const auto tags = check_tags((*db).analyzer(), note.tags, limits, "The note");
    Json shown = Json::array();
    for (const auto& t : tags)
        shown.push_back(t.shown);
    const std::string tags_json = shown.dump();
    const auto tokens = (*db).analyzer().count(note.text) + (*db).analyzer().count(tags_json);
    const auto terms = (*db).analyzer().distinct_terms({note.text, tags_json});

    std::lock_guard lock(write_mutex_);
    Transaction tx(*db, Transaction::Kind::write);
    (*db)
        .statement("INSERT INTO owners (subject, store) VALUES (?1, ?2) ON CONFLICT (subject, store) DO NOTHING")
        .bind(1, owner.principal)
        .bind(2, owner.store)
        .step();
    auto& take = (*db).statement("UPDATE owners SET next_number = next_number + 1, note_count = note_count + 1, "
                                 "token_count = token_count + ?3 WHERE subject = ?1 AND store = ?2 "
                                 "RETURNING id, next_number - 1");
    take.bind(1, owner.principal).bind(2, owner.store).bind(3, static_cast<int64_t>(tokens));
    take.step();
    const int64_t owner_id = take.integer(0);
    const int64_t number = take.integer(1);
    take.reset();

    auto& insert = (*db).statement("INSERT INTO notes (owner_id, number, text, tags, critical, created_ms, "
                                   "token_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id");
    insert.bind(1, owner_id)
        .bind(2, number)
        .bind(3, note.text)
        .bind(4, tags_json)
        .bind(5, int64_t{note.critical ? 1 : 0})
        .bind(6, now_ms())
        .bind(7, static_cast<int64_t>(tokens));
    insert.step();
    const int64_t note_id = insert.integer(0);
    insert.reset();
    for (const auto& t : tags)
        (*db)
            .statement("INSERT INTO note_tags (owner_id, tag_key, note_id) VALUES (?1, ?2, ?3)")
            .bind(1, owner_id)
            .bind(2, t.key)
            .bind(3, note_id)
            .step();
    count_terms(*db, owner_id, terms, +1);
    tx.commit();
    return number;
}

std::vector<Note> NoteStore::recall(const Owner& owner, const RecallQuery& query) {
    const auto& limits = settings_.limits;
    int limit = query.limit <= 0 ? limits.default_recall : query.limit;
    limit = std::min(limit, limits.max_recall);

    auto db = pool_->acquire();
    // Query text never reaches FTS5 as syntax: it is cut into folded tokens
    // here and each token is quoted, so quotes, *, NEAR, OR and AND are just
    // words (or nothing).
    std::vector<std::string> words;
    for (auto& w : (*db).analyzer().words(query.query))
        if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(std::move(w));
    if (words.size() > limits.max_query_words)
        throw NoteRejected("The query has " + std::to_string(words.size()) + " different words; recall takes at most " +
                           std::to_string(limits.max_query_words) + ". Keep the telling ones.");

    std::vector<std::string> tag_keys;
    for (auto& t : check_tags((*db).analyzer(), query.tags, limits, "The query"))
        tag_keys.push_back(std::move(t.key));

    std::vector<Note> notes;
    int64_t owner_id = 0;
    {
        Transaction tx(*db, Transaction::Kind::read);
        owner_id = find_owner(*db, owner);
        if (owner_id == 0) return {};
        notes = words.empty() ? latest(*db, owner_id, tag_keys, query.critical_only, limit)
                              : search(*db, owner_id, words, tag_keys, query.critical_only, limit);
        tx.commit();
    }
    if (std::any_of(notes.begin(), notes.end(), [](const Note& n) { return n.critical; }))
        mark_critical_read(*db, owner_id, notes);
    return notes;
}

std::vector<Note> NoteStore::latest(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& tags,
                                    bool critical_only, int limit) {
    std::vector<Note> notes;
    const std::string only_critical = critical_only ? " AND n.critical = 1" : "";
    if (tags.empty()) {
        auto& s = db.statement(std::string("SELECT ") + kNoteColumns + " FROM notes n WHERE n.owner_id = ?1" +
                               only_critical + " ORDER BY n.number DESC LIMIT ?2");
        s.bind(1, owner_id).bind(2, int64_t{limit});
        while (s.step())
            notes.push_back(read_note(s));
        return notes;
    }
    // Walk the first tag's notes newest first; the other tags must be there too.
    std::string sql = std::string("SELECT ") + kNoteColumns +
                      " FROM note_tags t JOIN notes n ON n.id = t.note_id WHERE t.owner_id = ?1 AND t.tag_key = ?3" +
                      only_critical;
    for (std::size_t i = 1; i < tags.size(); ++i)
        sql += " AND EXISTS (SELECT 1 FROM note_tags o WHERE o.owner_id = ?1 AND o.tag_key = ?" +
               std::to_string(i + 3) + " AND o.note_id = n.id)";
    sql += " ORDER BY t.note_id DESC LIMIT ?2";
    auto& s = db.statement(sql);
    s.bind(1, owner_id).bind(2, int64_t{limit});
    for (std::size_t i = 0; i < tags.size(); ++i)
        s.bind(static_cast<int>(i + 3), tags[i]);
    while (s.step())
        notes.push_back(read_note(s));
    return notes;
}

// FTS5 finds the candidate rows, but the score is computed here
// (recall_ranking.hpp): bm25() in FTS5 takes its IDF and average length from
// the whole table, i.e. from every owner's notes, so the order of Alice's
// results would shift with what Bob writes, and Alice could learn how common a
// word is in other people's notes. Here document frequencies (owner_terms),
// note count and average length are the owner's own.
//
// Bounded: the words in at most kCandidatesPerWord of the owner's notes are
// looked for together, every note of theirs; a word in more is looked for
// alone, in its newest kCandidatesPerWord notes. A note found by one word
// counts the hits of every word of that search, so only an old note's hits of
// a common word can go uncounted.
std::vector<Note> NoteStore::search(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& words,
                                    const std::vector<std::string>& tags, bool critical_only, int limit) {
    auto phrases = query_phrases(db.analyzer(), words);
    auto& frequency = db.statement("SELECT notes FROM owner_terms WHERE owner_id = ?1 AND term = ?2");
    std::vector<int64_t> word_notes(words.size(), 0); // the most notes any phrase of the word is in
    for (auto& p : phrases) {
        frequency.bind(1, owner_id).bind(2, p.term);
        p.notes = frequency.step() ? frequency.integer(0) : 0;
        frequency.reset();
        word_notes[p.word] = std::max(word_notes[p.word], p.notes);
    }

    std::vector<std::vector<std::size_t>> searches; // phrase indices, one MATCH each
    std::vector<bool> capped;
    std::vector<std::size_t> together;
    for (std::size_t w = 0; w < words.size(); ++w) {
        if (word_notes[w] == 0) continue;
        std::vector<std::size_t> mine;
        for (std::size_t p = 0; p < phrases.size(); ++p)
            if (phrases[p].word == w) mine.push_back(p);
        if (static_cast<std::size_t>(word_notes[w]) > kCandidatesPerWord) {
            searches.push_back(std::move(mine));
            capped.push_back(true);
        } else {
            together.insert(together.end(), mine.begin(), mine.end());
        }
    }
    if (!together.empty()) {
        searches.push_back(std::move(together));
        capped.push_back(false);
    }
    if (searches.empty()) return {};

    std::string filter;
    if (critical_only) filter += " AND n.critical = 1";
    for (std::size_t i = 0; i < tags.size(); ++i)
        filter += " AND EXISTS (SELECT 1 FROM note_tags o WHERE o.owner_id = ?2 AND o.tag_key = ?" +
                  std::to_string(i + 3) + " AND o.note_id = n.id)";
    const std::string base = "SELECT n.id, n.number, n.token_count, note_term_counts(notes_fts) FROM notes_fts CROSS "
                             "JOIN notes n ON n.id = notes_fts.rowid WHERE notes_fts MATCH ?1 AND n.owner_id = ?2" +
                             filter;

    std::vector<Candidate> candidates;
    std::unordered_map<int64_t, std::size_t> by_id;
    for (std::size_t i = 0; i < searches.size(); ++i) {
        auto& s = db.statement(
            capped[i] ? base + " ORDER BY notes_fts.rowid DESC LIMIT " + std::to_string(kCandidatesPerWord) : base);
        s.bind(1, match_expression(phrases, searches[i])).bind(2, owner_id);
        for (std::size_t t = 0; t < tags.size(); ++t)
            s.bind(static_cast<int>(t + 3), tags[t]);
        while (s.step()) {
            const int64_t id = s.integer(0);
            auto [it, added] = by_id.try_emplace(id, candidates.size());
            if (added) candidates.push_back({id, s.integer(1), s.integer(2), std::vector<uint32_t>(phrases.size())});
            const auto counts = s.uint32_blob(3);
            auto& into = candidates[it->second].counts;
            for (std::size_t k = 0; k < counts.size() && k < searches[i].size(); ++k)
                into[searches[i][k]] = counts[k];
        }
        s.reset();
    }
    if (candidates.empty()) return {};

    auto& stats = db.statement("SELECT note_count, token_count FROM owners WHERE id = ?1");
    stats.bind(1, owner_id).step();
    const OwnerStatistics owner{stats.integer(0), stats.integer(1)};
    stats.reset();
    const auto top = rank_candidates(candidates, phrases, owner, static_cast<std::size_t>(limit));

    std::vector<Note> notes;
    auto& fetch = db.statement(std::string("SELECT ") + kNoteColumns + " FROM notes n WHERE n.id = ?1");
    for (std::size_t i = 0; i < top; ++i) {
        fetch.bind(1, candidates[i].id);
        if (fetch.step()) notes.push_back(read_note(fetch));
        fetch.reset();
    }
    return notes;
}

void NoteStore::mark_critical_read(SqliteDatabase& db, int64_t owner_id, const std::vector<Note>& notes) {
    std::lock_guard lock(write_mutex_);
    Transaction tx(db, Transaction::Kind::write);
    const int64_t now = now_ms();
    for (const auto& n : notes) {
        if (!n.critical) continue;
        // By number within the owner: the note may have been forgotten since
        // it was read, and then there is nothing to mark.
        db.statement("INSERT INTO critical_reads (owner_id, note_id, first_read_ms) "
                     "SELECT owner_id, id, ?3 FROM notes WHERE owner_id = ?1 AND number = ?2 "
                     "ON CONFLICT (owner_id, note_id) DO NOTHING")
            .bind(1, owner_id)
            .bind(2, n.id)
            .bind(3, now)
            .step();
    }
    tx.commit();
}

bool NoteStore::forget(const Owner& owner, int64_t id) {
    auto db = pool_->acquire();
    std::lock_guard lock(write_mutex_);
    Transaction tx(*db, Transaction::Kind::write);
    auto& s = (*db).statement("DELETE FROM notes WHERE owner_id = (SELECT id FROM owners WHERE subject = ?1 AND "
                              "store = ?2) AND number = ?3 RETURNING owner_id, token_count, text, tags");
    s.bind(1, owner.principal).bind(2, owner.store).bind(3, id);
    if (!s.step()) return false;
    const int64_t owner_id = s.integer(0);
    const int64_t tokens = s.integer(1);
    const auto terms = (*db).analyzer().distinct_terms({s.text(2), s.text(3)});
    s.reset();
    count_terms(*db, owner_id, terms, -1);
    (*db)
        .statement("UPDATE owners SET note_count = note_count - 1, token_count = token_count - ?2 WHERE id = ?1")
        .bind(1, owner_id)
        .bind(2, tokens)
        .step();
    tx.commit();
    return true;
}

int64_t NoteStore::forget_all(const Owner& owner) {
    auto db = pool_->acquire();
    std::lock_guard lock(write_mutex_);
    Transaction tx(*db, Transaction::Kind::write);
    const int64_t owner_id = find_owner(*db, owner);
    if (owner_id == 0) return 0;
    auto& s = (*db).statement("DELETE FROM notes WHERE owner_id = ?1");
    s.bind(1, owner_id).step();
    const int64_t deleted = sqlite3_changes64((*db).handle());
    s.reset();
    (*db).statement("UPDATE owners SET note_count = 0, token_count = 0 WHERE id = ?1").bind(1, owner_id).step();
    (*db).statement("DELETE FROM owner_terms WHERE owner_id = ?1").bind(1, owner_id).step();
    tx.commit();
    return deleted;
}

std::vector<Note> NoteStore::critical_notes(const Owner& owner) {
    auto db = pool_->acquire();
    Transaction tx(*db, Transaction::Kind::read);
    std::vector<Note> out;
    auto& s = (*db).statement(std::string("SELECT ") + kNoteColumns +
                              " FROM notes n JOIN owners o ON o.id = n.owner_id "
                              "WHERE o.subject = ?1 AND o.store = ?2 AND n.critical = 1 ORDER BY n.number");
    s.bind(1, owner.principal).bind(2, owner.store);
    while (s.step())
        out.push_back(read_note(s));
    tx.commit();
    return out;
}

std::vector<int64_t> NoteStore::unread_critical(const Owner& owner) {
    auto db = pool_->acquire();
    Transaction tx(*db, Transaction::Kind::read);
    std::vector<int64_t> out;
    auto& s = (*db).statement(
        "SELECT n.number FROM notes n JOIN owners o ON o.id = n.owner_id WHERE o.subject = ?1 AND o.store = ?2 "
        "AND n.critical = 1 AND NOT EXISTS (SELECT 1 FROM critical_reads r WHERE r.owner_id = o.id AND "
        "r.note_id = n.id) ORDER BY n.number");
    s.bind(1, owner.principal).bind(2, owner.store);
    while (s.step())
        out.push_back(s.integer(0));
    tx.commit();
    return out;
}

NoteStore::CheckReport NoteStore::check() {
    CheckReport report;
    auto db = pool_->acquire();
    Transaction tx(*db, Transaction::Kind::read);
    auto& integrity = (*db).statement("PRAGMA integrity_check");
    while (integrity.step())
        if (const auto line = integrity.text(0); line != "ok") report.problems.push_back("sqlite: " + line);
    integrity.reset();
    try {
        // With rank 1 FTS5 also compares the index with the notes it indexes.
        (*db).exec("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)");
    } catch (const SqliteError& e) {
        report.problems.push_back(std::string("the word index disagrees with the notes: ") + e.what());
    }
    auto& owners = (*db).statement("SELECT o.id, o.subject, o.store, o.note_count, "
                                   "(SELECT count(*) FROM notes n WHERE n.owner_id = o.id) FROM owners o");
    while (owners.step()) {
        ++report.owners;
        report.notes += owners.integer(4);
        if (owners.integer(3) != owners.integer(4))
            report.problems.push_back("owner " + std::to_string(owners.integer(0)) + " counts " +
                                      std::to_string(owners.integer(3)) + " notes but has " +
                                      std::to_string(owners.integer(4)));
    }
    owners.reset();
    std::map<std::pair<int64_t, std::string>, int64_t> expected;
    auto& notes = (*db).statement("SELECT owner_id, text, tags FROM notes");
    while (notes.step())
        for (auto& term : (*db).analyzer().distinct_terms({notes.text(1), notes.text(2)}))
            ++expected[{notes.integer(0), std::move(term)}];
    notes.reset();
    auto& terms = (*db).statement("SELECT owner_id, term, notes FROM owner_terms");
    std::size_t wrong = 0;
    while (terms.step()) {
        auto it = expected.find({terms.integer(0), terms.text(1)});
        const int64_t want = it == expected.end() ? 0 : it->second;
        if (want != terms.integer(2)) ++wrong;
        if (it != expected.end()) expected.erase(it);
    }
    terms.reset();
    wrong += expected.size(); // terms of notes that no count holds
    if (wrong > 0)
        report.problems.push_back(std::to_string(wrong) +
                                  " of the owners' term counts disagree with their notes (recall ranks by them)");
    tx.commit();
    return report;
}

} // namespace memory
