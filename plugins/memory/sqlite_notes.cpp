#include "sqlite_notes.hpp"

#include "object_pool.hpp"
#include "schema_migrations.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

namespace memory {

namespace {

using Json = nlohmann::json;

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
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

class SqliteNotes final : public NoteBackend {
public:
    SqliteNotes(const std::string& path, Synchronous synchronous, const Stemming& stemming)
        : pool_([=] { return std::make_unique<SqliteDatabase>(path, synchronous, stemming); }) {
        auto db = pool_.acquire();
        std::lock_guard lock(write_mutex_);
        migrate_schema(*db);
    }

    int64_t remember(const Owner& owner, const CheckedNote& note) override;
    std::vector<Note> recall(const Owner& owner, const CheckedQuery& query) override;
    bool forget(const Owner& owner, int64_t number) override;
    int64_t forget_all(const Owner& owner) override;
    std::vector<int64_t> unread_critical(const Owner& owner) override;
    std::vector<Note> critical_notes(const Owner& owner) override;
    CheckReport check() override;
    int schema_version() override {
        auto db = pool_.acquire();
        return memory::schema_version(*db);
    }

private:
    std::vector<Note> latest(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& tag_keys,
                             bool critical_only, int limit);
    std::vector<Note> search(SqliteDatabase& db, int64_t owner_id, const CheckedQuery& query);
    void mark_critical_read(SqliteDatabase& db, int64_t owner_id, const std::vector<Note>& notes);

    ObjectPool<SqliteDatabase> pool_;
    std::mutex write_mutex_;
};

int64_t SqliteNotes::remember(const Owner& owner, const CheckedNote& note) {
    auto db = pool_.acquire();
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
    take.bind(1, owner.principal).bind(2, owner.store).bind(3, note.tokens);
    take.step();
    const int64_t owner_id = take.integer(0);
    const int64_t number = take.integer(1);
    take.reset();

    auto& insert = (*db).statement("INSERT INTO notes (owner_id, number, text, tags, critical, created_ms, "
                                   "token_count, owner_token) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'owner' || ?1) "
                                   "RETURNING id");
    insert.bind(1, owner_id)
        .bind(2, number)
        .bind(3, note.text)
        .bind(4, note.tags_json)
        .bind(5, int64_t{note.critical ? 1 : 0})
        .bind(6, note.created_ms)
        .bind(7, note.tokens);
    insert.step();
    const int64_t note_id = insert.integer(0);
    insert.reset();
    for (const auto& key : note.tag_keys)
        (*db)
            .statement("INSERT INTO note_tags (owner_id, tag_key, note_id) VALUES (?1, ?2, ?3)")
            .bind(1, owner_id)
            .bind(2, key)
            .bind(3, note_id)
            .step();
    std::vector<std::string> terms;
    for (const auto& [term, hits] : note.terms)
        terms.push_back(term);
    count_terms(*db, owner_id, terms, +1);
    tx.commit();
    return number;
}

std::vector<Note> SqliteNotes::recall(const Owner& owner, const CheckedQuery& query) {
    auto db = pool_.acquire();
    std::vector<Note> notes;
    int64_t owner_id = 0;
    {
        Transaction tx(*db, Transaction::Kind::read);
        owner_id = find_owner(*db, owner);
        if (owner_id == 0) return {};
        notes = query.phrases.empty() ? latest(*db, owner_id, query.tag_keys, query.critical_only, query.limit)
                                      : search(*db, owner_id, query);
        tx.commit();
    }
    if (std::any_of(notes.begin(), notes.end(), [](const Note& n) { return n.critical; }))
        mark_critical_read(*db, owner_id, notes);
    return notes;
}

std::vector<Note> SqliteNotes::latest(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& tags,
                                      bool critical_only, int limit) {
    std::vector<Note> notes;
    const std::string only_critical = critical_only ? " AND n.critical = 1" : "";
    // The critical notes not read yet come first: with more of them than a
    // recall returns, each recall shows the next ones, so the gate's
    // "read every critical note" can always be met.
    const std::string unread_first =
        critical_only ? " EXISTS (SELECT 1 FROM critical_reads r WHERE r.owner_id = ?1 AND r.note_id = n.id)," : "";
    const auto newest_first = [&] {
        if (critical_only)
            std::sort(notes.begin(), notes.end(), [](const Note& a, const Note& b) { return a.id > b.id; });
    };
    if (tags.empty()) {
        auto& s = db.statement(std::string("SELECT ") + kNoteColumns + " FROM notes n WHERE n.owner_id = ?1" +
                               only_critical + " ORDER BY" + unread_first + " n.number DESC LIMIT ?2");
        s.bind(1, owner_id).bind(2, int64_t{limit});
        while (s.step())
            notes.push_back(read_note(s));
        newest_first();
        return notes;
    }
    // Walk the first tag's notes newest first; the other tags must be there too.
    std::string sql = std::string("SELECT ") + kNoteColumns +
                      " FROM note_tags t JOIN notes n ON n.id = t.note_id WHERE t.owner_id = ?1 AND t.tag_key = ?3" +
                      only_critical;
    for (std::size_t i = 1; i < tags.size(); ++i)
        sql += " AND EXISTS (SELECT 1 FROM note_tags o WHERE o.owner_id = ?1 AND o.tag_key = ?" +
               std::to_string(i + 3) + " AND o.note_id = n.id)";
    sql += " ORDER BY" + unread_first + " t.note_id DESC LIMIT ?2";
    auto& s = db.statement(sql);
    s.bind(1, owner_id).bind(2, int64_t{limit});
    for (std::size_t i = 0; i < tags.size(); ++i)
        s.bind(static_cast<int>(i + 3), tags[i]);
    while (s.step())
        notes.push_back(read_note(s));
    newest_first();
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
std::vector<Note> SqliteNotes::search(SqliteDatabase& db, int64_t owner_id, const CheckedQuery& query) {
    auto phrases = query.phrases;
    auto& frequency = db.statement("SELECT notes FROM owner_terms WHERE owner_id = ?1 AND term = ?2");
    for (auto& p : phrases) {
        frequency.bind(1, owner_id).bind(2, p.term);
        p.notes = frequency.step() ? frequency.integer(0) : 0;
        frequency.reset();
    }
    const auto searches = plan_searches(phrases, query.words);
    if (searches.empty()) return {};

    const auto& tags = query.tag_keys;
    std::string filter;
    if (query.critical_only) filter += " AND n.critical = 1";
    for (std::size_t i = 0; i < tags.size(); ++i)
        filter += " AND EXISTS (SELECT 1 FROM note_tags o WHERE o.owner_id = ?2 AND o.tag_key = ?" +
                  std::to_string(i + 3) + " AND o.note_id = n.id)";
    const std::string base = "SELECT n.id, n.number, n.token_count, note_term_counts(notes_fts) FROM notes_fts CROSS "
                             "JOIN notes n ON n.id = notes_fts.rowid WHERE notes_fts MATCH ?1 AND n.owner_id = ?2" +
                             filter;

    auto& stats = db.statement("SELECT note_count, token_count FROM owners WHERE id = ?1");
    stats.bind(1, owner_id).step();
    const OwnerStatistics owner{stats.integer(0), stats.integer(1)};
    stats.reset();
    // The owner's token narrows a search to the owner's notes (schema
    // version 3): FTS5 walks the token's postings and seeks in the words'.
    // That pays while the owner holds a small share of the file's notes; for
    // one that holds most of them the token's postings are nearly the whole
    // index, and walking them costs more than the other owners' hits it
    // skips (at a million notes of one owner, recall took three times as
    // long). The newest id stands for the notes ever written: one index seek.
    auto& newest = db.statement("SELECT max(id) FROM notes");
    newest.step();
    const bool narrow_to_owner = owner.notes * 2 < newest.integer(0);
    newest.reset();
    const std::string owner_phrase =
        narrow_to_owner ? " AND owner_token : \"owner" + std::to_string(owner_id) + "\"" : std::string();

    std::vector<Candidate> candidates;
    std::unordered_map<int64_t, std::size_t> by_id;
    for (const auto& search : searches) {
        // A capped search walks the index newest first: FTS5 reads a doclist
        // backwards and stops at the limit.
        auto& s = db.statement(
            search.capped ? base + " ORDER BY notes_fts.rowid DESC LIMIT " + std::to_string(kCandidatesPerWord) : base);
        // The words in the note's own columns, and the owner's token when it
        // narrows (above). The owner's phrase comes last, so
        // note_term_counts' first counts are the words'.
        s.bind(1, "{text tags} : (" + match_expression(phrases, search.phrases) + ")" + owner_phrase).bind(2, owner_id);
        for (std::size_t t = 0; t < tags.size(); ++t)
            s.bind(static_cast<int>(t + 3), tags[t]);
        while (s.step()) {
            const int64_t id = s.integer(0);
            auto [it, added] = by_id.try_emplace(id, candidates.size());
            if (added) candidates.push_back({id, s.integer(1), s.integer(2), std::vector<uint32_t>(phrases.size())});
            const auto counts = s.uint32_blob(3);
            auto& into = candidates[it->second].counts;
            for (std::size_t k = 0; k < counts.size() && k < search.phrases.size(); ++k)
                into[search.phrases[k]] = counts[k];
        }
        s.reset();
    }
    if (candidates.empty()) return {};

    const auto top = rank_candidates(candidates, phrases, owner, static_cast<std::size_t>(query.limit));

    std::vector<Note> notes;
    auto& fetch = db.statement(std::string("SELECT ") + kNoteColumns + " FROM notes n WHERE n.id = ?1");
    for (std::size_t i = 0; i < top; ++i) {
        fetch.bind(1, candidates[i].id);
        if (fetch.step()) notes.push_back(read_note(fetch));
        fetch.reset();
    }
    return notes;
}

void SqliteNotes::mark_critical_read(SqliteDatabase& db, int64_t owner_id, const std::vector<Note>& notes) {
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

bool SqliteNotes::forget(const Owner& owner, int64_t id) {
    auto db = pool_.acquire();
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

int64_t SqliteNotes::forget_all(const Owner& owner) {
    auto db = pool_.acquire();
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

std::vector<Note> SqliteNotes::critical_notes(const Owner& owner) {
    auto db = pool_.acquire();
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

std::vector<int64_t> SqliteNotes::unread_critical(const Owner& owner) {
    auto db = pool_.acquire();
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

CheckReport SqliteNotes::check() {
    CheckReport report;
    auto db = pool_.acquire();
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
    CountAudit<TermKey> counts;
    auto& notes = (*db).statement("SELECT owner_id, text, tags FROM notes");
    while (notes.step())
        for (auto& term : (*db).analyzer().distinct_terms({notes.text(1), notes.text(2)}))
            ++counts.expect({notes.integer(0), std::move(term)});
    notes.reset();
    auto& terms = (*db).statement("SELECT owner_id, term, notes FROM owner_terms");
    while (terms.step())
        counts.stored({terms.integer(0), terms.text(1)}, terms.integer(2));
    terms.reset();
    if (counts.wrong() > 0) report.problems.push_back(term_counts_problem(counts.wrong()));
    tx.commit();
    return report;
}

} // namespace

std::unique_ptr<NoteBackend> make_sqlite_notes(const std::string& path, Synchronous synchronous,
                                               const Stemming& stemming) {
    return std::make_unique<SqliteNotes>(path, synchronous, stemming);
}

} // namespace memory
