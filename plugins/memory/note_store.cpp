#include "note_store.hpp"

#include "card_number_guard.hpp"
#include "schema_migrations.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
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
        return Lease(*this, std::make_unique<SqliteDatabase>(settings_.database_path, settings_.synchronous));
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
std::string tag_key(const FoldingTokenizer& tokenizer, const std::string& tag) {
    auto key = join(tokenizer.tokens(tag), " ");
    return key.empty() ? tag : key;
}

struct CheckedTag {
    std::string shown;
    std::string key;
};

std::vector<CheckedTag> check_tags(const FoldingTokenizer& tokenizer, const std::vector<std::string>& tags,
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
        CheckedTag checked{tag, tag_key(tokenizer, tag)};
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

// BM25 (Robertson/Sparck Jones IDF with +1, as Lucene, so a word in most of a
// small owner's notes still counts a little rather than going negative).
constexpr double kK1 = 1.2;
constexpr double kB = 0.75;

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
    const auto tags = check_tags((*db).tokenizer(), note.tags, limits, "The note");
    Json shown = Json::array();
    for (const auto& t : tags)
        shown.push_back(t.shown);
    const std::string tags_json = shown.dump();
    const auto tokens = (*db).tokenizer().count(note.text) + (*db).tokenizer().count(tags_json);

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
    for (auto& w : (*db).tokenizer().tokens(query.query))
        if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(std::move(w));
    if (words.size() > limits.max_query_words)
        throw NoteRejected("The query has " + std::to_string(words.size()) + " different words; recall takes at most " +
                           std::to_string(limits.max_query_words) + ". Keep the telling ones.");

    std::vector<std::string> tag_keys;
    for (auto& t : check_tags((*db).tokenizer(), query.tags, limits, "The query"))
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

// FTS5 finds the candidate rows, but the score is computed here: bm25() in
// FTS5 takes its IDF and average length from the whole table, i.e. from every
// owner's notes, so the order of Alice's results would shift with what Bob
// writes, and Alice could learn how common a word is in other people's notes.
// Here document frequency, note count and average length are the owner's own.
std::vector<Note> NoteStore::search(SqliteDatabase& db, int64_t owner_id, const std::vector<std::string>& words,
                                    const std::vector<std::string>& tags, bool critical_only, int limit) {
    std::string match;
    for (const auto& w : words) {
        if (!match.empty()) match += " OR ";
        match += '"';
        for (char c : w)
            match += c == '"' ? std::string("\"\"") : std::string(1, c);
        match += '"';
    }
    std::string sql = "SELECT n.id, n.number, n.token_count, note_term_counts(notes_fts) FROM notes_fts CROSS "
                      "JOIN notes n ON n.id = notes_fts.rowid WHERE notes_fts MATCH ?1 AND n.owner_id = ?2";
    if (critical_only) sql += " AND n.critical = 1";
    for (std::size_t i = 0; i < tags.size(); ++i)
        sql += " AND EXISTS (SELECT 1 FROM note_tags o WHERE o.owner_id = ?2 AND o.tag_key = ?" +
               std::to_string(i + 3) + " AND o.note_id = n.id)";

    struct Candidate {
        int64_t id;
        int64_t number;
        int64_t length;
        std::vector<uint32_t> counts; // hits of word 0, word 1, ...
        double score = 0;
    };
    std::vector<Candidate> candidates;
    auto& s = db.statement(sql);
    s.bind(1, match).bind(2, owner_id);
    for (std::size_t i = 0; i < tags.size(); ++i)
        s.bind(static_cast<int>(i + 3), tags[i]);
    while (s.step())
        candidates.push_back({s.integer(0), s.integer(1), s.integer(2), s.uint32_blob(3)});
    s.reset();
    if (candidates.empty()) return {};

    auto& stats = db.statement("SELECT note_count, token_count FROM owners WHERE id = ?1");
    stats.bind(1, owner_id).step();
    const double note_count = std::max<double>(1, static_cast<double>(stats.integer(0)));
    const double average_length = std::max(1.0, static_cast<double>(stats.integer(1)) / note_count);
    stats.reset();

    std::vector<double> idf(words.size());
    for (std::size_t w = 0; w < words.size(); ++w) {
        const double df = static_cast<double>(std::count_if(candidates.begin(), candidates.end(), [&](const auto& c) {
            return c.counts.size() > w && c.counts[w] > 0;
        }));
        idf[w] = std::log(1.0 + (note_count - df + 0.5) / (df + 0.5));
    }
    for (auto& c : candidates) {
        const double length = c.length > 0 ? static_cast<double>(c.length) : average_length;
        for (std::size_t w = 0; w < words.size() && w < c.counts.size(); ++w) {
            const double tf = c.counts[w];
            if (tf > 0) c.score += idf[w] * tf * (kK1 + 1) / (tf + kK1 * (1 - kB + kB * length / average_length));
        }
    }
    const auto top = std::min(candidates.size(), static_cast<std::size_t>(limit));
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(top), candidates.end(),
                      [](const Candidate& a, const Candidate& b) {
                          if (a.score != b.score) return a.score > b.score;
                          return a.number > b.number;
                      });

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
                              "store = ?2) AND number = ?3 RETURNING owner_id, token_count");
    s.bind(1, owner.principal).bind(2, owner.store).bind(3, id);
    if (!s.step()) return false;
    const int64_t owner_id = s.integer(0);
    const int64_t tokens = s.integer(1);
    s.reset();
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

} // namespace memory
