#include "schema_migrations.hpp"

#include "sqlite_database.hpp"

#include <string>
#include <vector>

namespace memory {

namespace {

// Version 1.
//  owners        one row per (principal, store); "" is "no session". The
//                `subject` column holds the host's owner key, which for the
//                local user is its plain name, as before owner keys: notes
//                kept before stay the local user's.
//                Keeps the owner's counters: the next note number (numbers
//                are per owner and never reused, so an id says nothing about
//                other owners), and the note and token totals recall's
//                ranking needs.
//  notes         the notes; `id` is internal, `number` is what the agent sees.
//                `tags` is the JSON array as given; FTS indexes it as text.
//  note_tags     folded tag keys, for recall's tag filter.
//  notes_fts     FTS5 over text and tags, external content = notes, kept in
//                step by triggers.
//  critical_reads  which critical notes each owner has read, for the gate.
// The triggers that kept notes_fts in step with notes in versions 1 and 2.
constexpr const char* kFirstIndexTriggers = R"(
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text, tags) VALUES ('delete', old.id, old.text, old.tags);
END;
)";

// ... and since version 3, with the owner's token.
constexpr const char* kIndexTriggers = R"(
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, text, tags, owner_token) VALUES (new.id, new.text, new.tags, new.owner_token);
END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text, tags, owner_token)
        VALUES ('delete', old.id, old.text, old.tags, old.owner_token);
END;
)";

std::string version_1() {
    return R"(
CREATE TABLE owners (
    id          INTEGER PRIMARY KEY,
    subject     TEXT NOT NULL,
    store       TEXT NOT NULL,
    next_number INTEGER NOT NULL DEFAULT 1,
    note_count  INTEGER NOT NULL DEFAULT 0,
    token_count INTEGER NOT NULL DEFAULT 0,
    UNIQUE (subject, store)
);
CREATE TABLE notes (
    id          INTEGER PRIMARY KEY,
    owner_id    INTEGER NOT NULL REFERENCES owners(id),
    number      INTEGER NOT NULL,
    text        TEXT NOT NULL,
    tags        TEXT NOT NULL,
    critical    INTEGER NOT NULL DEFAULT 0,
    created_ms  INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    UNIQUE (owner_id, number)
);
CREATE INDEX notes_critical ON notes (owner_id, number) WHERE critical = 1;
CREATE TABLE note_tags (
    owner_id INTEGER NOT NULL,
    tag_key  TEXT NOT NULL,
    note_id  INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    PRIMARY KEY (owner_id, tag_key, note_id)
) WITHOUT ROWID;
CREATE INDEX note_tags_by_note ON note_tags (note_id);
CREATE TABLE critical_reads (
    owner_id   INTEGER NOT NULL,
    note_id    INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    first_read_ms INTEGER NOT NULL,
    PRIMARY KEY (owner_id, note_id)
) WITHOUT ROWID;
CREATE INDEX critical_reads_by_note ON critical_reads (note_id);
CREATE VIRTUAL TABLE notes_fts USING fts5(text, tags, content = 'notes', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2');
)" + std::string(kFirstIndexTriggers);
}

// Version 2: stemming, and bounded recall.
//  notes_fts     rebuilt with the "gatehouse" tokenizer: every word also
//                indexed under its stem term (term_analyzer.hpp).
//  owner_terms   per owner, how many notes hold each term (exact and stem):
//                the document frequencies recall ranks with. Kept exact, so
//                a word recall looks for in its newest notes only still
//                weighs what it weighs over all of them.
void version_2(SqliteDatabase& db) {
    db.exec(R"(
CREATE TABLE owner_terms (
    owner_id INTEGER NOT NULL REFERENCES owners(id),
    term     TEXT NOT NULL,
    notes    INTEGER NOT NULL,
    PRIMARY KEY (owner_id, term)
) WITHOUT ROWID;
)");
}

// Version 3: a search reads the owner's own postings.
//  notes.owner_token  "owner<owners.id>", one word, indexed in notes_fts's
//                own column: a search matches it beside the query's words,
//                so FTS5 steps through the owner's notes and seeks in each
//                word's postings, where it read every owner's postings of the
//                words and dropped the others' rows after (a recall's work
//                grew with what everyone else wrote, and a capped word's
//                newest notes were looked for among everyone's).
void version_3(SqliteDatabase& db) {
    db.exec("ALTER TABLE notes ADD COLUMN owner_token TEXT NOT NULL DEFAULT ''; "
            "UPDATE notes SET owner_token = 'owner' || owner_id;");
}

std::string index_definition(const SqliteDatabase& db) {
    return "CREATE VIRTUAL TABLE notes_fts USING fts5(text, tags, owner_token, content = 'notes', content_rowid = "
           "'id', " +
           note_tokenize_clause(db.analyzer().stemming()) + ")";
}

std::string current_index_definition(SqliteDatabase& db) {
    auto& s = db.statement("SELECT sql FROM sqlite_schema WHERE name = 'notes_fts'");
    std::string sql = s.step() ? s.text(0) : std::string();
    s.reset();
    return sql;
}

// Drops the index and builds it again from the notes with this connection's
// tokenizer settings, and counts every owner's terms again with the same
// analyzer. Inside the caller's write transaction.
void rebuild_index(SqliteDatabase& db) {
    db.exec("DROP TRIGGER IF EXISTS notes_fts_insert; DROP TRIGGER IF EXISTS notes_fts_delete; "
            "DROP TABLE IF EXISTS notes_fts;");
    db.exec(index_definition(db).c_str());
    db.exec(kIndexTriggers);
    db.exec("INSERT INTO notes_fts (notes_fts) VALUES ('rebuild'); DELETE FROM owner_terms;");
    auto& notes = db.statement("SELECT owner_id, text, tags FROM notes ORDER BY owner_id");
    auto& add = db.statement("INSERT INTO owner_terms (owner_id, term, notes) VALUES (?1, ?2, 1) "
                             "ON CONFLICT (owner_id, term) DO UPDATE SET notes = notes + 1");
    while (notes.step()) {
        const int64_t owner = notes.integer(0);
        for (const auto& term : db.analyzer().distinct_terms({notes.text(1), notes.text(2)})) {
            add.bind(1, owner).bind(2, term).step();
            add.reset();
        }
    }
    notes.reset();
}

} // namespace

int schema_version(SqliteDatabase& db) {
    auto& s = db.statement("PRAGMA user_version");
    s.step();
    const int version = static_cast<int>(s.integer(0));
    s.reset();
    return version;
}

void migrate_schema(SqliteDatabase& db) {
    static_assert(kSchemaVersion == 3, "add the new version's step below");
    // Up to date, as on every start but the first: no write transaction
    // (it would take the file's write lock, waiting on any other host).
    if (schema_version(db) == kSchemaVersion && current_index_definition(db) == index_definition(db)) return;
    Transaction tx(db, Transaction::Kind::write);
    int version = schema_version(db);
    if (version > kSchemaVersion)
        throw std::runtime_error("the notes database has schema version " + std::to_string(version) +
                                 ", newer than this plugin's " + std::to_string(kSchemaVersion) +
                                 "; use the newer plugin or another database file");
    for (; version < kSchemaVersion; ++version) {
        if (version == 0) db.exec(version_1().c_str());
        if (version == 1) version_2(db);
        if (version == 2) version_3(db);
        db.exec(("PRAGMA user_version = " + std::to_string(version + 1)).c_str());
    }
    if (current_index_definition(db) != index_definition(db)) rebuild_index(db);
    tx.commit();
}

} // namespace memory
