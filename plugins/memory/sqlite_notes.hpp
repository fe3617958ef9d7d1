// The notes in one SQLite file (the default backend): FTS5 finds the
// candidates (its "gatehouse" tokenizer indexes words and stems), the owners'
// term counts give the statistics, recall_ranking scores.
//
// Thread-safe: each call takes a connection from a pool; writers queue on one
// mutex (SQLite has one writer at a time) while readers, in WAL mode, read
// their snapshot without waiting. What remains shared between owners is time:
// a query for a word many other owners use takes longer, because FTS5 walks
// the whole posting list before the owner filter.
#pragma once

#include "note_backend.hpp"
#include "sqlite_database.hpp"

#include <memory>

namespace memory {

std::unique_ptr<NoteBackend> make_sqlite_notes(const std::string& path, Synchronous synchronous,
                                               const Stemming& stemming);

} // namespace memory
