// The notes database schema, one migration per version (PRAGMA user_version).
#pragma once

namespace memory {

class SqliteDatabase;

// The version this build writes; a newer file is refused rather than guessed at.
inline constexpr int kSchemaVersion = 3;

// Brings the file up to kSchemaVersion in one transaction (user_version is
// transactional, so a crash leaves the old version or the new one, never half).
// Throws when the file is newer than this build. Then, when the index was
// built with other stemming settings than the connection's (the YAML
// changed), rebuilds it and the owners' term counts, in one transaction too.
void migrate_schema(SqliteDatabase& db);

int schema_version(SqliteDatabase& db);

} // namespace memory
