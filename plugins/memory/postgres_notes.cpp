#include "postgres_notes.hpp"

#include "object_pool.hpp"
#include "postgres_connection.hpp"
#include "term_analyzer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <chrono>
#include <unordered_map>

namespace memory {

namespace {

using Json = nlohmann::json;

// Taken by the migration, so hosts starting together migrate once.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7245130021)";

// Version 1. The same tables as the SQLite file, with the index as tables of
// its own (see postgres_notes.hpp). note_terms carries what ranking reads of
// a note (its number, length and critical flag) in its primary key's
// leaves, so a recall reads one owner's range of that index and nothing of
// the notes but the few it returns (an index-only scan; without it, every
// candidate was a random read of the notes table). Terms compare byte for byte (COLLATE
// "C"): they are folded already, and a stem term starts with kStemMarker.
constexpr const char* kVersion1 = R"(
CREATE TABLE owners (
    id          bigserial PRIMARY KEY,
    subject     text NOT NULL,
    store       text NOT NULL,
    next_number bigint NOT NULL DEFAULT 1,
    note_count  bigint NOT NULL DEFAULT 0,
    token_count bigint NOT NULL DEFAULT 0,
    UNIQUE (subject, store)
);
CREATE TABLE notes (
    id          bigserial PRIMARY KEY,
    owner_id    bigint NOT NULL REFERENCES owners(id),
    number      bigint NOT NULL,
    text        text NOT NULL,
    tags        text NOT NULL,
    critical    boolean NOT NULL DEFAULT false,
    created_ms  bigint NOT NULL,
    token_count integer NOT NULL,
    UNIQUE (owner_id, number)
);
CREATE INDEX notes_critical ON notes (owner_id, number) WHERE critical;
CREATE TABLE note_tags (
    owner_id bigint NOT NULL,
    tag_key  text COLLATE "C" NOT NULL,
    note_id  bigint NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    PRIMARY KEY (owner_id, tag_key, note_id)
);
CREATE INDEX note_tags_by_note ON note_tags (note_id);
CREATE TABLE critical_reads (
    owner_id      bigint NOT NULL,
    note_id       bigint NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    first_read_ms bigint NOT NULL,
    PRIMARY KEY (owner_id, note_id)
);
CREATE INDEX critical_reads_by_note ON critical_reads (note_id);
CREATE TABLE note_terms (
    owner_id bigint NOT NULL,
    term     text COLLATE "C" NOT NULL,
    note_id  bigint NOT NULL,
    hits     integer NOT NULL,
    number   bigint NOT NULL,
    length   integer NOT NULL,
    critical boolean NOT NULL,
    PRIMARY KEY (owner_id, term, note_id) INCLUDE (hits, number, length, critical)
);
CREATE TABLE owner_terms (
    owner_id bigint NOT NULL,
    term     text COLLATE "C" NOT NULL,
    notes    bigint NOT NULL,
    PRIMARY KEY (owner_id, term)
);
)";

// Version 2. A recall reads the newest notes' index entries by index-only
// scans, which skip the table only for pages the visibility map marks
// all-visible, and only a vacuum marks them. PostgreSQL's default vacuums an
// insert-only table after 1000 rows plus a fifth of its size, so at 25
// million term rows up to the newest fifth (the very rows a capped word
// reads) stayed unmarked and every one cost a heap fetch: at a million notes
// the recall p50 was 3.1 ms warm against 1.8 ms once marked. Without the
// fifth, autovacuum takes every thousand new rows whatever the table's size,
// under steady writes once a naptime (a minute by default).
constexpr const char* kVersion2 = R"(
ALTER TABLE note_terms SET (autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);
ALTER TABLE note_tags SET (autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);
)";

constexpr const char* kNoteColumns = "n.id, n.number, n.text, n.tags, n.critical, n.created_ms";

Note read_note(const PgResult& r, int row) {
    // Columns: id, number, text, tags, critical, created_ms.
    Note n;
    n.id = r.integer(row, 1);
    n.text = r.text(row, 2);
    n.tags = Json::parse(r.text(row, 3)).get<std::vector<std::string>>();
    n.critical = r.boolean(row, 4);
    n.created_ms = r.integer(row, 5);
    return n;
}

// A data-modifying WITH after one named n (the notes a recall returns, with
// their owner_id): the critical ones among them marked read at `now`.
std::string mark_critical_read(const std::string& now) {
    return ", r AS (INSERT INTO critical_reads (owner_id, note_id, first_read_ms) SELECT n.owner_id, n.id, " + now +
           "::bigint FROM n WHERE n.critical ON CONFLICT (owner_id, note_id) DO NOTHING)";
}

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::vector<std::string> terms_only(const std::vector<std::pair<std::string, uint32_t>>& hits) {
    std::vector<std::string> out;
    for (const auto& [term, n] : hits)
        out.push_back(term);
    return out;
}

class PostgresNotes final : public NoteBackend {
public:
    PostgresNotes(const std::string& url, const Stemming& stemming)
        : signature_(note_tokenize_clause(stemming)), pool_([url] { return std::make_unique<PgConnection>(url); }),
          analyzers_([stemming] { return std::make_unique<StandaloneAnalyzer>(stemming); }) {
        // A server that is down at start is not the end of the family: its
        // calls answer NotesUnavailable, and the first one that reaches the
        // server migrates.
        try {
            connection();
        } catch (const NotesUnavailable&) {
        }
    }

    int64_t remember(const Owner& owner, const CheckedNote& note) override;
    std::vector<Note> recall(const Owner& owner, const CheckedQuery& query) override;
    bool forget(const Owner& owner, int64_t number) override;
    int64_t forget_all(const Owner& owner) override;
    std::vector<int64_t> unread_critical(const Owner& owner) override;
    std::vector<Note> critical_notes(const Owner& owner) override;
    CheckReport check() override;
    int schema_version() override {
        auto conn = connection();
        const auto r = conn->run("SELECT version FROM memory_schema");
        return r.rows() ? static_cast<int>(r.integer(0, 0)) : 0;
    }

private:
    // A connection from the pool, the schema brought up to date first if no
    // call has reached the server yet.
    ObjectPool<PgConnection>::Lease connection() {
        auto conn = pool_.acquire();
        if (!migrated_.load(std::memory_order_acquire)) {
            std::lock_guard lock(migrate_mutex_);
            if (!migrated_.load(std::memory_order_relaxed)) {
                migrate(*conn);
                migrated_.store(true, std::memory_order_release);
            }
        }
        return conn;
    }
    void migrate(PgConnection& conn);
    void rebuild_terms(PgConnection& conn);
    std::vector<Note> newest(PgConnection& conn, const Owner& owner, const CheckedQuery& query);
    std::optional<OwnerStatistics> find_candidates(PgConnection& conn, const Owner& owner,
                                                   std::vector<QueryPhrase>& phrases, const CheckedQuery& query,
                                                   std::vector<Candidate>& candidates);

    std::string signature_; // which analyzer settings made note_terms
    ObjectPool<PgConnection> pool_;
    ObjectPool<StandaloneAnalyzer> analyzers_;
    std::atomic<bool> migrated_{false};
    std::mutex migrate_mutex_;
};

void PostgresNotes::migrate(PgConnection& conn) {
    if (auto why = unsupported_postgres(conn.server_version())) throw std::runtime_error(*why);
    PgTransaction tx(conn);
    // A migration, or the terms rebuilt for new stemming settings (25
    // million rows at a million notes), or the wait for another host's, may
    // take longer than the 30 s a call's statement is given: this
    // transaction alone has no bound, or a large database could never be
    // brought up to date and the family never start.
    conn.exec("SET LOCAL statement_timeout = 0");
    conn.exec(kMigrationLock);
    conn.exec("CREATE TABLE IF NOT EXISTS memory_schema (version integer NOT NULL, terms_made_by text NOT NULL)");
    const auto r = conn.run("SELECT version, terms_made_by FROM memory_schema");
    int version = r.rows() ? static_cast<int>(r.integer(0, 0)) : 0;
    const std::string made_by = r.rows() ? r.text(0, 1) : signature_;
    if (version > kPostgresSchemaVersion)
        throw std::runtime_error("the notes database has schema version " + std::to_string(version) +
                                 ", newer than this plugin's " + std::to_string(kPostgresSchemaVersion) +
                                 "; use the newer plugin or another database");
    if (version == 0) {
        conn.exec(kVersion1);
        conn.run("INSERT INTO memory_schema (version, terms_made_by) VALUES ($1::integer, $2)",
                 PgParams().add(int64_t{1}).add(signature_));
        version = 1;
    }
    if (version == 1) {
        conn.exec(kVersion2);
        conn.exec("UPDATE memory_schema SET version = 2");
        version = 2;
    }
    static_assert(kPostgresSchemaVersion == 2, "add the new version's step above");
    if (made_by != signature_) {
        rebuild_terms(conn);
        conn.run("UPDATE memory_schema SET terms_made_by = $1", PgParams().add(signature_));
    }
    tx.commit();
}

// The stemming settings changed: every note's terms again, with this host's
// analyzer, in batches; then the owners' frequencies from them.
void PostgresNotes::rebuild_terms(PgConnection& conn) {
    conn.exec("DELETE FROM note_terms; DELETE FROM owner_terms");
    auto analyzer = analyzers_.acquire();
    int64_t after = 0;
    for (;;) {
        const auto batch = conn.run("SELECT id, owner_id, text, tags, number, token_count, critical FROM notes WHERE "
                                    "id > $1::bigint ORDER BY id LIMIT 1000",
                                    PgParams().add(after));
        if (batch.rows() == 0) break;
        std::vector<int64_t> owners, notes, hits, numbers, lengths;
        std::vector<std::string> terms, critical;
        for (int i = 0; i < batch.rows(); ++i) {
            after = batch.integer(i, 0);
            for (const auto& [term, n] : (*analyzer)->term_hits({batch.text(i, 2), batch.text(i, 3)})) {
                owners.push_back(batch.integer(i, 1));
                notes.push_back(after);
                terms.push_back(term);
                hits.push_back(n);
                numbers.push_back(batch.integer(i, 4));
                lengths.push_back(batch.integer(i, 5));
                critical.push_back(batch.text(i, 6));
            }
        }
        conn.run("INSERT INTO note_terms (owner_id, term, note_id, hits, number, length, critical) SELECT * FROM "
                 "unnest($1::bigint[], $2::text[], $3::bigint[], $4::integer[], $5::bigint[], $6::integer[], "
                 "$7::boolean[])",
                 PgParams()
                     .add_array(owners)
                     .add_array(terms)
                     .add_array(notes)
                     .add_array(hits)
                     .add_array(numbers)
                     .add_array(lengths)
                     .add_array(critical));
    }
    conn.exec("INSERT INTO owner_terms (owner_id, term, notes) SELECT owner_id, term, count(*) FROM note_terms "
              "GROUP BY owner_id, term");
}

int64_t PostgresNotes::remember(const Owner& owner, const CheckedNote& note) {
    std::vector<std::string> terms;
    std::vector<int64_t> hits;
    for (const auto& [term, n] : note.terms) {
        terms.push_back(term);
        hits.push_back(n);
    }
    // One statement, so one transaction and one round trip. The owners row
    // is taken first: writes of one owner queue there, on every host.
    auto conn = connection();
    const auto r = conn->run(
        "WITH o AS (INSERT INTO owners (subject, store, next_number, note_count, token_count) "
        "VALUES ($1, $2, 2, 1, $3::bigint) ON CONFLICT (subject, store) DO UPDATE SET "
        "next_number = owners.next_number + 1, note_count = owners.note_count + 1, "
        "token_count = owners.token_count + EXCLUDED.token_count RETURNING id, next_number - 1 AS number), "
        "n AS (INSERT INTO notes (owner_id, number, text, tags, critical, created_ms, token_count) "
        "SELECT o.id, o.number, $4, $5, $6::boolean, $7::bigint, $3::integer FROM o RETURNING id, owner_id, number), "
        "t AS (INSERT INTO note_tags (owner_id, tag_key, note_id) SELECT n.owner_id, k, n.id FROM n, "
        "unnest($8::text[]) AS k), "
        "nt AS (INSERT INTO note_terms (owner_id, term, note_id, hits, number, length, critical) SELECT "
        "n.owner_id, u.term, n.id, u.hits, n.number, $3::integer, $6::boolean "
        "FROM n, unnest($9::text[], $10::integer[]) AS u(term, hits)), "
        "ot AS (INSERT INTO owner_terms (owner_id, term, notes) SELECT n.owner_id, u.term, 1 FROM n, "
        "unnest($9::text[]) AS u(term) ON CONFLICT (owner_id, term) DO UPDATE SET notes = owner_terms.notes + 1) "
        "SELECT number FROM n",
        PgParams()
            .add(owner.principal)
            .add(owner.store)
            .add(note.tokens)
            .add(note.text)
            .add(note.tags_json)
            .add(note.critical)
            .add(note.created_ms)
            .add_array(note.tag_keys)
            .add_array(terms)
            .add_array(hits));
    return r.integer(0, 0);
}

std::vector<Note> PostgresNotes::recall(const Owner& owner, const CheckedQuery& query) {
    auto conn = connection();
    if (query.phrases.empty()) return newest(*conn, owner, query);
    auto phrases = query.phrases;
    std::vector<Candidate> candidates;
    const auto statistics = find_candidates(*conn, owner, phrases, query, candidates);
    if (!statistics || candidates.empty()) return {};
    const auto top = rank_candidates(candidates, phrases, *statistics, static_cast<std::size_t>(query.limit));
    std::vector<int64_t> ids;
    for (std::size_t i = 0; i < top; ++i)
        ids.push_back(candidates[i].id);
    // The notes, and the critical ones among them marked read, in one round
    // trip. By id: a note forgotten since the search is left out.
    const auto r = conn->run(std::string("WITH n AS (SELECT ") + kNoteColumns +
                                 ", n.owner_id FROM notes n WHERE n.id = ANY($1::bigint[]))" +
                                 mark_critical_read("$2") + " SELECT * FROM n",
                             PgParams().add_array(ids).add(now_ms()));
    std::unordered_map<int64_t, Note> by_row;
    for (int i = 0; i < r.rows(); ++i)
        by_row.emplace(r.integer(i, 0), read_note(r, i));
    std::vector<Note> notes;
    for (auto id : ids)
        if (auto it = by_row.find(id); it != by_row.end()) notes.push_back(std::move(it->second));
    return notes;
}

// No words: the newest notes (of the tags, if any), the critical ones among
// them marked read, in one round trip.
std::vector<Note> PostgresNotes::newest(PgConnection& conn, const Owner& owner, const CheckedQuery& query) {
    PgParams params;
    params.add(owner.principal).add(owner.store).add(now_ms()).add(int64_t{query.limit});
    const std::string critical = query.critical_only ? " AND n.critical" : "";
    // Unread critical notes first (see SqliteNotes::latest); shown newest first all the same.
    const std::string unread_first =
        query.critical_only ? " EXISTS (SELECT 1 FROM critical_reads r WHERE r.owner_id = o.id AND r.note_id = n.id),"
                            : "";
    std::string sql =
        std::string("WITH o AS (SELECT id FROM owners WHERE subject = $1 AND store = $2), n AS (SELECT ") +
        kNoteColumns + ", n.owner_id FROM o JOIN ";
    if (query.tag_keys.empty()) {
        sql += "notes n ON n.owner_id = o.id WHERE true" + critical + " ORDER BY" + unread_first +
               " n.number DESC LIMIT $4::bigint)";
    } else {
        // Walk the first tag's notes newest first; the others must be there too.
        sql += "note_tags t ON t.owner_id = o.id AND t.tag_key = $5 JOIN notes n ON n.id = t.note_id WHERE (SELECT "
               "count(*) FROM note_tags g WHERE g.owner_id = o.id AND g.note_id = n.id AND g.tag_key = "
               "ANY($6::text[])) = $7::bigint" +
               critical + " ORDER BY" + unread_first + " t.note_id DESC LIMIT $4::bigint)";
        params.add(query.tag_keys[0]).add_array(query.tag_keys).add(static_cast<int64_t>(query.tag_keys.size()));
    }
    sql += mark_critical_read("$3") + " SELECT * FROM n ORDER BY number DESC";
    const auto r = conn.run(sql, params);
    std::vector<Note> notes;
    for (int i = 0; i < r.rows(); ++i)
        notes.push_back(read_note(r, i));
    return notes;
}

// The owner's statistics, how many of its notes hold each phrase, and every
// candidate's hits, in one statement: one round trip, with no wait for the
// counts before the search. Each query word is one search of its phrases'
// rows in note_terms. A word whose broadest phrase (the one in the most
// notes; the first on a tie) is in more than kCandidatesPerWord notes is
// read only from the oldest of that phrase's newest kCandidatesPerWord notes
// on: one contiguous range of the index per phrase, since the broadest
// phrase holds every note the others do. This is plan_searches' plan,
// decided by the server from its own counts: a term belongs to one word and
// a word to one search, so each row is one candidate's hits of one phrase.
// Nothing when the owner has no notes.
std::optional<OwnerStatistics> PostgresNotes::find_candidates(PgConnection& conn, const Owner& owner,
                                                              std::vector<QueryPhrase>& phrases,
                                                              const CheckedQuery& query,
                                                              std::vector<Candidate>& candidates) {
    // Parameters: $1 and $2 the owner, $3 every phrase's term, $4 and $5 the
    // tags and their count (when there are tags: PostgreSQL cannot type a
    // parameter no SQL uses), then each word's terms.
    std::vector<std::string> terms;
    for (const auto& p : phrases)
        terms.push_back(p.term);
    PgParams params;
    params.add(owner.principal).add(owner.store).add_array(terms);
    int next = 4;
    if (!query.tag_keys.empty()) {
        params.add_array(query.tag_keys).add(static_cast<int64_t>(query.tag_keys.size()));
        next = 6;
    }
    auto filter = [&](const std::string& row) {
        std::string f;
        if (query.critical_only) f += " AND " + row + ".critical";
        if (!query.tag_keys.empty())
            f += " AND (SELECT count(*) FROM note_tags g WHERE g.owner_id = " + row +
                 ".owner_id AND g.note_id = " + row + ".note_id AND g.tag_key = ANY($4::text[])) = $5::bigint";
        return f;
    };
    const std::string cap = std::to_string(kCandidatesPerWord);
    std::string bounds, searches;
    for (std::size_t w = 0; w < query.words; ++w) {
        std::vector<std::string> word_terms;
        for (const auto& p : phrases)
            if (p.word == w) word_terms.push_back(p.term);
        params.add_array(word_terms);
        const std::string at = "$" + std::to_string(next++) + "::text[]";
        const std::string bound = "b" + std::to_string(w);
        // MATERIALIZED: the bound is found once, not once per row searched.
        // No bound (0) for a word under the cap; past the end of the index
        // for a capped word none of whose notes the filter lets through, so
        // its search reads nothing rather than all of its notes.
        bounds += ", " + bound + " AS MATERIALIZED (SELECT CASE WHEN count(w.term) = 0 THEN 0 ELSE " +
                  "coalesce(min(c.note_id), 9223372036854775807) END AS low FROM (SELECT s.term FROM s WHERE s.term " +
                  "= ANY(" + at + ") AND s.notes > " + cap + " ORDER BY s.notes DESC, array_position(" + at +
                  ", s.term) LIMIT 1) w LEFT JOIN LATERAL (SELECT u.note_id FROM note_terms u WHERE u.owner_id = " +
                  "(SELECT id FROM o) AND u.term = w.term" + filter("u") + " ORDER BY u.note_id DESC LIMIT " + cap +
                  ") c ON true)";
        searches += " UNION ALL SELECT t.note_id, t.number, t.length, t.hits, t.term FROM o, " + bound +
                    " JOIN note_terms t ON t.note_id >= " + bound + ".low WHERE t.owner_id = o.id AND " +
                    "t.term = ANY(" + at + ")" + filter("t");
    }
    // Rows, each branch of the same column types so that the candidates'
    // rows, nearly all of them, are sent as the index holds them: the owner
    // (notes, tokens; no length and no term), a phrase's note count (notes,
    // term; no length), a candidate's hits of a phrase (note, number, length,
    // hits, term).
    const auto rows = conn.run(
        "WITH o AS (SELECT id, note_count, token_count FROM owners WHERE subject = $1 AND store = $2), s AS "
        "(SELECT t.term, t.notes FROM o JOIN owner_terms t ON t.owner_id = o.id AND t.term = ANY($3::text[]))" +
            bounds +
            " SELECT o.note_count, o.token_count, NULL::integer, NULL::integer, NULL::text FROM o UNION ALL SELECT "
            "s.notes, NULL, NULL, NULL, s.term FROM s" +
            searches,
        params);
    std::optional<OwnerStatistics> statistics;
    std::unordered_map<int64_t, std::size_t> by_id;
    for (int i = 0; i < rows.rows(); ++i) {
        if (rows.null(i, 4)) {
            statistics = OwnerStatistics{rows.integer(i, 0), rows.integer(i, 1)};
            continue;
        }
        const auto term = rows.view(i, 4);
        std::size_t p = 0;
        while (p < phrases.size() && phrases[p].term != term)
            ++p;
        if (p == phrases.size()) continue;
        if (rows.null(i, 2)) {
            phrases[p].notes = rows.integer(i, 0);
            continue;
        }
        auto [it, added] = by_id.try_emplace(rows.integer(i, 0), candidates.size());
        if (added)
            candidates.push_back(
                {rows.integer(i, 0), rows.integer(i, 1), rows.integer(i, 2), std::vector<uint32_t>(phrases.size())});
        candidates[it->second].counts[p] = static_cast<uint32_t>(rows.integer(i, 3));
    }
    return statistics;
}

bool PostgresNotes::forget(const Owner& owner, int64_t number) {
    auto conn = connection();
    PgTransaction tx(*conn);
    const auto locked = conn->run("SELECT id FROM owners WHERE subject = $1 AND store = $2 FOR UPDATE",
                                  PgParams().add(owner.principal).add(owner.store));
    if (locked.rows() == 0) return false;
    const int64_t owner_id = locked.integer(0, 0);
    const auto deleted =
        conn->run("DELETE FROM notes WHERE owner_id = $1::bigint AND number = $2::bigint RETURNING id, token_count, "
                  "text, tags",
                  PgParams().add(owner_id).add(number));
    if (deleted.rows() == 0) return false;
    const int64_t note_id = deleted.integer(0, 0);
    const auto terms = (*analyzers_.acquire())->distinct_terms({deleted.text(0, 2), deleted.text(0, 3)});
    conn->run("DELETE FROM note_terms WHERE owner_id = $1::bigint AND term = ANY($2::text[]) AND note_id = $3::bigint",
              PgParams().add(owner_id).add_array(terms).add(note_id));
    // Two statements: the DELETE of a statement whose WITH updated the same
    // rows skips them (PostgreSQL performs only the update), so counts that
    // reached 0 stayed as rows.
    conn->run("DELETE FROM owner_terms WHERE owner_id = $1::bigint AND term = ANY($2::text[]) AND notes <= 1",
              PgParams().add(owner_id).add_array(terms));
    conn->run("UPDATE owner_terms SET notes = notes - 1 WHERE owner_id = $1::bigint AND term = ANY($2::text[])",
              PgParams().add(owner_id).add_array(terms));
    conn->run("UPDATE owners SET note_count = note_count - 1, token_count = token_count - $2::bigint WHERE id = "
              "$1::bigint",
              PgParams().add(owner_id).add(deleted.integer(0, 1)));
    tx.commit();
    return true;
}

int64_t PostgresNotes::forget_all(const Owner& owner) {
    auto conn = connection();
    PgTransaction tx(*conn);
    const auto locked = conn->run("SELECT id FROM owners WHERE subject = $1 AND store = $2 FOR UPDATE",
                                  PgParams().add(owner.principal).add(owner.store));
    if (locked.rows() == 0) return 0;
    PgParams id;
    id.add(locked.integer(0, 0));
    conn->run("DELETE FROM note_terms WHERE owner_id = $1::bigint", id);
    conn->run("DELETE FROM owner_terms WHERE owner_id = $1::bigint", id);
    const auto deleted =
        conn->run("WITH d AS (DELETE FROM notes WHERE owner_id = $1::bigint RETURNING 1) SELECT count(*) FROM d", id);
    conn->run("UPDATE owners SET note_count = 0, token_count = 0 WHERE id = $1::bigint", id);
    tx.commit();
    return deleted.integer(0, 0);
}

std::vector<Note> PostgresNotes::critical_notes(const Owner& owner) {
    auto conn = connection();
    const auto r = conn->run(std::string("SELECT ") + kNoteColumns +
                                 " FROM notes n JOIN owners o ON o.id = n.owner_id WHERE o.subject = $1 AND "
                                 "o.store = $2 AND n.critical ORDER BY n.number",
                             PgParams().add(owner.principal).add(owner.store));
    std::vector<Note> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back(read_note(r, i));
    return out;
}

std::vector<int64_t> PostgresNotes::unread_critical(const Owner& owner) {
    auto conn = connection();
    const auto r = conn->run("SELECT n.number FROM notes n JOIN owners o ON o.id = n.owner_id WHERE o.subject = $1 "
                             "AND o.store = $2 AND n.critical AND NOT EXISTS (SELECT 1 FROM critical_reads r WHERE "
                             "r.owner_id = o.id AND r.note_id = n.id) ORDER BY n.number",
                             PgParams().add(owner.principal).add(owner.store));
    std::vector<int64_t> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back(r.integer(i, 0));
    return out;
}

CheckReport PostgresNotes::check() {
    CheckReport report;
    auto conn = connection();
    auto analyzer = analyzers_.acquire();
    // One snapshot for the whole reading.
    conn->exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    conn->set_in_transaction(true);
    const auto owners =
        conn->run("SELECT o.id, o.note_count, (SELECT count(*) FROM notes n WHERE n.owner_id = o.id) FROM owners o");
    for (int i = 0; i < owners.rows(); ++i) {
        ++report.owners;
        report.notes += owners.integer(i, 2);
        if (owners.integer(i, 1) != owners.integer(i, 2))
            report.problems.push_back("owner " + std::to_string(owners.integer(i, 0)) + " counts " +
                                      std::to_string(owners.integer(i, 1)) + " notes but has " +
                                      std::to_string(owners.integer(i, 2)));
    }
    CountAudit<TermKey> counts; // (owner, term): how many notes hold it
    CountAudit<TermKey> index;  // (note, term): its hits in the note
    const auto notes = conn->run("SELECT id, owner_id, text, tags FROM notes");
    for (int i = 0; i < notes.rows(); ++i)
        for (auto& [term, hits] : (*analyzer)->term_hits({notes.text(i, 2), notes.text(i, 3)})) {
            ++counts.expect({notes.integer(i, 1), term});
            index.expect({notes.integer(i, 0), std::move(term)}) = hits;
        }
    const auto indexed = conn->run("SELECT note_id, term, hits FROM note_terms");
    for (int i = 0; i < indexed.rows(); ++i)
        index.stored({indexed.integer(i, 0), indexed.text(i, 1)}, indexed.integer(i, 2));
    if (index.wrong() > 0)
        report.problems.push_back(std::string("the word index disagrees with the notes: ") +
                                  std::to_string(index.wrong()) + " of the notes' terms are missing or wrong");
    const auto counted = conn->run("SELECT owner_id, term, notes FROM owner_terms");
    for (int i = 0; i < counted.rows(); ++i)
        counts.stored({counted.integer(i, 0), counted.text(i, 1)}, counted.integer(i, 2));
    if (counts.wrong() > 0) report.problems.push_back(term_counts_problem(counts.wrong()));
    conn->exec("COMMIT");
    conn->set_in_transaction(false);
    return report;
}

} // namespace

std::optional<std::string> unsupported_postgres(int server_version_num) {
    // Version 2's autovacuum_vacuum_insert_* settings came with PostgreSQL 13.
    constexpr int kOldestSupportedServerVersion = 130000;
    if (server_version_num >= kOldestSupportedServerVersion) return std::nullopt;
    const int major = server_version_num / 10000;
    const std::string shown = major >= 10
                                  ? std::to_string(major) + "." + std::to_string(server_version_num % 100)
                                  : std::to_string(major) + "." + std::to_string(server_version_num / 100 % 100);
    return "the notes database's server is PostgreSQL " + shown +
           "; the memory family needs PostgreSQL 13 or newer (its schema sets autovacuum_vacuum_insert_scale_factor): "
           "upgrade the server, or keep the notes in a SQLite file";
}

std::unique_ptr<NoteBackend> make_postgres_notes(const std::string& url, const Stemming& stemming) {
    return std::make_unique<PostgresNotes>(url, stemming);
}

} // namespace memory
