// The notes in a PostgreSQL database, shared by every host of a cluster
// (`domains.memory.settings.database: postgresql://...`). The index is the
// database's own: note_terms holds each note's terms (exact and stem, from
// the same TermAnalyzer as the SQLite index) with their hits, keyed by owner
// first, so a word's notes are read from one owner's part of a B-tree,
// newest first, and no query ever walks another owner's notes. owner_terms
// holds the document frequencies recall ranks with (recall_ranking.hpp).
//
// Every write is one transaction committed synchronously; concurrent writes
// for one owner queue on its owners row, so note numbers stay unique across
// hosts. A lost server is NotesUnavailable for the calls it fails; dead
// connections are dropped and new ones made on the next call.
#pragma once

#include "note_backend.hpp"
#include "word_stemmer.hpp"

#include <memory>
#include <optional>
#include <string>

namespace memory {

// The PostgreSQL schema this plugin makes and reads; a database at a newer
// version is refused.
constexpr int kPostgresSchemaVersion = 2;

// Throws NotesUnavailable when the server cannot be reached at start.
std::unique_ptr<NoteBackend> make_postgres_notes(const std::string& url, const Stemming& stemming);

// Why a server of this version (server_version_num, e.g. 150004) cannot hold
// the notes, or nothing when it can: the schema needs PostgreSQL 13 or newer.
std::optional<std::string> unsupported_postgres(int server_version_num);

} // namespace memory
