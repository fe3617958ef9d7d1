#include "schema_migrations.hpp"

#include "folding_tokenizer.hpp"
#include "sqlite_database.hpp"

#include <string>

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
std::string version_1() {
    return std::string(R"(
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
CREATE VIRTUAL TABLE notes_fts USING fts5(text, tags, content = 'notes', content_rowid = 'id', )") +
           kTokenizeClause + R"();
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text, tags) VALUES ('delete', old.id, old.text, old.tags);
END;
)";
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
    const std::string steps[] = {version_1()};
    static_assert(kSchemaVersion == 1, "add the new version's step above");
    // Up to date, as on every start but the first: no write transaction
    // (it would take the file's write lock, waiting on any other host).
    if (schema_version(db) == kSchemaVersion) return;
    Transaction tx(db, Transaction::Kind::write);
    int version = schema_version(db);
    if (version > kSchemaVersion)
        throw std::runtime_error("the notes database has schema version " + std::to_string(version) +
                                 ", newer than this plugin's " + std::to_string(kSchemaVersion) +
                                 "; use the newer plugin or another database file");
    for (; version < kSchemaVersion; ++version) {
        db.exec(steps[version].c_str());
        db.exec(("PRAGMA user_version = " + std::to_string(version + 1)).c_str());
    }
    tx.commit();
}

} // namespace memory
