// Unit tests of the memory family's store: owners, ranking, stemming, limits,
// hostile input, critical read marks, schema versions, concurrent calls.
//
// One suite for both backends: with GATEHOUSE_TEST_POSTGRES set (a
// postgresql:// URL, as scripts/postgres.sh prints), every store is made in a
// fresh PostgreSQL schema instead of a fresh SQLite file. The cases tagged
// [sqlite] look inside the SQLite file and run on that backend only
// (ctest runs the PostgreSQL pass with "~[sqlite]").
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "card_number_guard.hpp"
#include "note_store.hpp"
#include "postgres_connection.hpp"
#include "postgres_notes.hpp"
#include "recall_ranking.hpp"
#include "schema_migrations.hpp"
#include "stemmer_library.hpp"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

using namespace memory;
namespace fs = std::filesystem;

namespace {

const char* postgres_url() {
    const char* url = std::getenv("GATEHOUSE_TEST_POSTGRES");
    return url && *url ? url : nullptr;
}

// Runs SQL on a PostgreSQL URL; the first column of the first row, if any.
std::string postgres_scalar(const std::string& url, const std::string& sql) {
    PGconn* conn = PQconnectdb(url.c_str());
    INFO(PQerrorMessage(conn));
    REQUIRE(PQstatus(conn) == CONNECTION_OK);
    PQclear(PQexec(conn, "SET client_min_messages = warning"));
    PGresult* r = PQexec(conn, sql.c_str());
    const auto status = PQresultStatus(r);
    INFO(sql << ": " << PQresultErrorMessage(r));
    std::string first = status == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    PQfinish(conn);
    REQUIRE((status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK));
    return first;
}

// A fresh database per test, removed afterwards: a SQLite file in a folder
// of its own, or a PostgreSQL schema of its own.
struct TempDatabase {
    fs::path dir;
    std::string schema;
    TempDatabase() {
        std::random_device rd;
        const auto tag = std::to_string(rd());
        dir = fs::temp_directory_path() / ("gatehouse-memory-test-" + tag);
        fs::create_directories(dir);
        if (postgres_url()) {
            schema = "test_" + tag;
            postgres_scalar(postgres_url(), "CREATE SCHEMA " + schema);
        }
    }
    ~TempDatabase() {
        fs::remove_all(dir);
        if (!schema.empty()) postgres_scalar(postgres_url(), "DROP SCHEMA " + schema + " CASCADE");
    }
    std::string database() const {
        if (schema.empty()) return (dir / "memory.db").string();
        return std::string(postgres_url()) + "&options=-csearch_path%3D" + schema;
    }
    StoreSettings settings() const {
        StoreSettings s;
        s.database_path = database();
        return s;
    }
};

// Runs SQL on the test's database through a connection of its own (for
// SQLite with the index's tokenizer, as every connection to it needs);
// returns the first column of the first row, if any.
std::string sql(const TempDatabase& tmp, const char* text) {
    if (!tmp.schema.empty()) return postgres_scalar(tmp.database(), text);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(tmp.database().c_str(), &db) == SQLITE_OK);
    register_note_tokenizer(fts5_api_of(db));
    char* error = nullptr;
    std::string first;
    auto row = [](void* out, int, char** values, char**) {
        auto& s = *static_cast<std::string*>(out);
        if (s.empty() && values[0]) s = values[0];
        return 0;
    };
    const int rc = sqlite3_exec(db, text, row, &first, &error);
    const std::string why = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    INFO(text << ": " << why);
    REQUIRE(rc == SQLITE_OK);
    return first;
}

const Owner alice{"alice", ""};
const Owner bob{"bob", ""};

std::vector<int64_t> ids(const std::vector<Note>& notes) {
    std::vector<int64_t> out;
    for (const auto& n : notes)
        out.push_back(n.id);
    return out;
}

std::vector<Note> find(NoteStore& store, const Owner& owner, std::string query, std::vector<std::string> tags = {},
                       int limit = 0) {
    return store.recall(owner, RecallQuery{std::move(query), std::move(tags), limit});
}

int64_t keep(NoteStore& store, const Owner& owner, std::string text, std::vector<std::string> tags = {},
             bool critical = false) {
    return store.remember(owner, NewNote{std::move(text), std::move(tags), critical});
}

} // namespace

TEST_CASE("remembered notes are found by their words, in any case, Cyrillic and Latin") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto contract = keep(store, alice, "Договор с ООО Ромашка до 31.12", {"договор"});
    const auto call = keep(store, alice, "Позвонить Иванову в пятницу");
    const auto cafe = keep(store, alice, "Meeting at the Café Müller");

    CHECK(ids(find(store, alice, "ДОГОВОР")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "ромашка")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "иванову")) == std::vector<int64_t>{call});
    CHECK(ids(find(store, alice, "cafe muller")) == std::vector<int64_t>{cafe});
    CHECK(find(store, alice, "отсутствует").empty());
    // An empty query gives the latest first.
    CHECK(ids(find(store, alice, "")) == std::vector<int64_t>{cafe, call, contract});
    const auto latest = find(store, alice, "", {}, 1);
    REQUIRE(latest.size() == 1);
    CHECK(latest[0].text == "Meeting at the Café Müller");
    CHECK(latest[0].created_ms > 0);
}

TEST_CASE("a word matches a tag as well as the text") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto tagged = keep(store, alice, "Срок до 31.12", {"Поставщики"});
    keep(store, alice, "Something else");
    CHECK(ids(find(store, alice, "поставщики")) == std::vector<int64_t>{tagged});
}

TEST_CASE("tags narrow recall: all of them must be on the note, compared case-folded") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto both = keep(store, alice, "first", {"Договор", "срочно"});
    const auto one = keep(store, alice, "second", {"договор"});
    keep(store, alice, "third", {"другое"});
    CHECK(ids(find(store, alice, "", {"ДОГОВОР"})) == std::vector<int64_t>{one, both});
    CHECK(ids(find(store, alice, "", {"договор", "Срочно"})) == std::vector<int64_t>{both});
    CHECK(ids(find(store, alice, "second", {"договор"})) == std::vector<int64_t>{one});
    CHECK(find(store, alice, "third", {"договор"}).empty());
    const auto got = find(store, alice, "first");
    REQUIRE(got.size() == 1);
    CHECK(got[0].tags == std::vector<std::string>{"Договор", "срочно"});
}

TEST_CASE("ranked by relevance, then by recency") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto old_match = keep(store, alice, "invoice for the lamp");
    const auto strong = keep(store, alice, "invoice invoice paid invoice lamp");
    const auto new_match = keep(store, alice, "invoice for the chair");
    keep(store, alice, "unrelated words here");
    const auto got = ids(find(store, alice, "invoice lamp"));
    REQUIRE(got.size() == 3);
    CHECK(got[0] == strong);    // both words, "invoice" three times
    CHECK(got[1] == old_match); // both words
    CHECK(got[2] == new_match); // one word
    // Equal scores: the newer note first.
    const auto a = keep(store, alice, "teapot one");
    const auto b = keep(store, alice, "teapot two");
    CHECK(ids(find(store, alice, "teapot")) == std::vector<int64_t>{b, a});
}

TEST_CASE("note ids are per owner and never reused") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    CHECK(keep(store, alice, "a1") == 1);
    CHECK(keep(store, alice, "a2") == 2);
    CHECK(keep(store, bob, "b1") == 1);
    CHECK(store.forget(alice, 2));
    CHECK(keep(store, alice, "a3") == 3);
    CHECK(store.forget_all(alice) == 2);
    CHECK(keep(store, alice, "a4") == 4);
}

TEST_CASE("one owner never reads, counts or deletes another's notes") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto secret = keep(store, alice, "alice secret plan", {"private"}, true);
    keep(store, alice, "alice second note");

    SECTION("recall by words, tags and latest") {
        CHECK(find(store, bob, "secret").empty());
        CHECK(find(store, bob, "", {"private"}).empty());
        CHECK(find(store, bob, "").empty());
        keep(store, bob, "bob has a secret too", {"private"});
        const auto got = find(store, bob, "secret");
        REQUIRE(got.size() == 1);
        CHECK(got[0].text == "bob has a secret too");
        CHECK(find(store, bob, "", {"private"}).size() == 1);
    }
    SECTION("forget by guessing ids") {
        for (int64_t id = 0; id < 20; ++id)
            CHECK_FALSE(store.forget(bob, id));
        CHECK(find(store, alice, "").size() == 2);
    }
    SECTION("forget of a shared number deletes only the caller's note") {
        const auto mine = keep(store, bob, "bob first");
        REQUIRE(mine == secret);
        CHECK(store.forget(bob, mine));
        CHECK(ids(find(store, alice, "secret")) == std::vector<int64_t>{secret});
    }
    SECTION("forget_all") {
        keep(store, bob, "bob note");
        CHECK(store.forget_all(bob) == 1);
        CHECK(find(store, alice, "").size() == 2);
        CHECK(store.forget_all(bob) == 0);
    }
    SECTION("critical notes") {
        CHECK(store.critical_notes(bob).empty());
        CHECK(store.unread_critical(bob).empty());
        CHECK(store.unread_critical(alice) == std::vector<int64_t>{secret});
    }
    SECTION("an owner key with a NUL in it is never the key before the NUL") {
        // libpq sends a text parameter up to its first NUL: PostgreSQL
        // refuses such a key where it would have read alice's notes.
        const Owner cut{std::string("alice\0x", 7), ""};
        std::vector<Note> got;
        try {
            got = find(store, cut, "secret");
        } catch (const std::exception&) {
        }
        CHECK(got.empty());
        try {
            store.forget_all(cut);
        } catch (const std::exception&) {
        }
        CHECK(find(store, alice, "").size() == 2);
    }
    SECTION("the store joins the owner key") {
        const Owner alice_in_shop{"alice", "shop-1"};
        CHECK(find(store, alice_in_shop, "secret").empty());
        CHECK(keep(store, alice_in_shop, "shop note") == 1);
        CHECK(find(store, alice, "").size() == 2);
        CHECK_FALSE(store.forget(alice_in_shop, 2));
    }
}

TEST_CASE("ranking uses only the owner's own statistics") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto cherry = keep(store, alice, "cherry jam");
    const auto banana = keep(store, alice, "banana jam");
    // Within Alice's notes both words are equally rare, so the newer note wins.
    REQUIRE(ids(find(store, alice, "banana cherry")) == std::vector<int64_t>{banana, cherry});
    for (int i = 0; i < 300; ++i)
        keep(store, bob, "banana number " + std::to_string(i));
    // Bob's bananas must not move Alice's results...
    CHECK(ids(find(store, alice, "banana cherry")) == std::vector<int64_t>{banana, cherry});
}

TEST_CASE("FTS5's own bm25() would let another owner's notes move the order", "[sqlite]") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto cherry = keep(store, alice, "cherry jam");
    const auto banana = keep(store, alice, "banana jam");
    for (int i = 0; i < 300; ++i)
        keep(store, bob, "banana number " + std::to_string(i));
    CHECK(ids(find(store, alice, "banana cherry")) == std::vector<int64_t>{banana, cherry});
    // bm25() over the shared table: the leak the store's ranking avoids. (A
    // connection of its own needs the index's tokenizer registered first,
    // like every connection the store opens.)
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(tmp.database().c_str(), &db) == SQLITE_OK);
    register_note_tokenizer(fts5_api_of(db));
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db,
                               "SELECT n.number FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid "
                               "JOIN owners o ON o.id = n.owner_id WHERE notes_fts MATCH '\"banana\" OR \"cherry\"' "
                               "AND o.subject = 'alice' ORDER BY bm25(notes_fts), n.number DESC",
                               -1, &s, nullptr) == SQLITE_OK);
    std::vector<int64_t> global_order;
    while (sqlite3_step(s) == SQLITE_ROW)
        global_order.push_back(sqlite3_column_int64(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    CHECK(global_order == std::vector<int64_t>{cherry, banana});
}

TEST_CASE("hostile queries are words, never FTS5 or SQL syntax") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto odd = keep(store, alice, R"(Robert'); DROP TABLE notes;-- said "NEAR" OR * and col:umn ^start)");
    const auto plain = keep(store, alice, "a plain note about near things");
    const char* queries[] = {"\"",
                             "\"unbalanced",
                             "*",
                             "NEAR(a b)",
                             "a OR",
                             "OR",
                             "AND NOT",
                             "text: x",
                             "tags:private",
                             "^start",
                             "'; DROP TABLE notes; --",
                             "x\" OR \"y",
                             "(((",
                             "-minus",
                             "+plus",
                             "{text tags}:a",
                             "NEAR/3",
                             "\\",
                             "\xF0\x9F\x98\x80"};
    for (const char* q : queries) {
        INFO(q);
        CHECK_NOTHROW(find(store, alice, q));
    }
    CHECK(ids(find(store, alice, "DROP TABLE")) == std::vector<int64_t>{odd});
    const auto near = ids(find(store, alice, "NEAR"));
    CHECK(std::set<int64_t>(near.begin(), near.end()) == std::set<int64_t>{odd, plain});
    CHECK(ids(find(store, alice, "*")) == std::vector<int64_t>{plain, odd}); // no words: the latest
    CHECK(find(store, alice, "").size() == 2);                               // the table is still there
}

TEST_CASE("text limits: empty, whitespace-only, oversized") {
    TempDatabase tmp;
    auto settings = tmp.settings();
    settings.limits.max_text_bytes = 1000;
    NoteStore store(settings);
    CHECK_THROWS_WITH(keep(store, alice, ""), Catch::Contains("empty"));
    CHECK_THROWS_WITH(keep(store, alice, " \t\n  "), Catch::Contains("empty"));
    CHECK_THROWS_WITH(keep(store, alice, "\xC2\xA0\xE3\x80\x80"), Catch::Contains("empty"));
    CHECK(keep(store, alice, std::string(1000, 'x')) == 1);
    CHECK_THROWS_WITH(keep(store, alice, std::string(1001, 'x')),
                      Catch::Contains("1001 bytes") && Catch::Contains("1000") && Catch::Contains("max_text_bytes"));
    CHECK_THROWS_AS(keep(store, alice, std::string(1 << 20, 'y')), NoteRejected);
    CHECK(find(store, alice, "").size() == 1);
}

TEST_CASE("a note with a NUL or another control character, or a word no index can hold, is refused whole") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    // Before, PostgreSQL kept the text up to the NUL and the words after it,
    // which forget could then never take back out of the counts.
    CHECK_THROWS_WITH(keep(store, alice, std::string("a\0secret plans", 14)),
                      Catch::Contains("control character (byte 0 at offset 1)"));
    CHECK_THROWS_WITH(keep(store, alice, "bell\x07"), Catch::Contains("control character (byte 7"));
    CHECK(keep(store, alice, "tabs\tand\nline breaks\r\nstay") == 1);
    // A word without spaces past 1024 bytes (random, so no compression
    // brings it under PostgreSQL's 2704-byte index entry).
    std::string blob;
    std::uint32_t x = 12345;
    for (int i = 0; i < 3000; ++i) {
        x = x * 1103515245u + 12345u;
        blob += "abcdefghijklmnopqrstuvwxyz0123456789"[(x >> 16) % 36];
    }
    CHECK_THROWS_WITH(keep(store, alice, "key " + blob), Catch::Contains("a word of 3000 bytes"));
    CHECK(keep(store, alice, "key " + blob.substr(0, 1024)) == 2);
    CHECK(find(store, alice, "").size() == 2);
}

TEST_CASE("tag limits: count, length, emptiness, control characters") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    std::vector<std::string> many(10000, "t");
    CHECK_THROWS_WITH(keep(store, alice, "x", many), Catch::Contains("10000 tags") && Catch::Contains("32"));
    CHECK_THROWS_WITH(find(store, alice, "", many), Catch::Contains("10000 tags"));
    std::vector<std::string> distinct;
    for (int i = 0; i < 32; ++i)
        distinct.push_back("tag" + std::to_string(i));
    CHECK(keep(store, alice, "x", distinct) == 1);
    std::string cyrillic64;
    for (int i = 0; i < 64; ++i)
        cyrillic64 += "ж";
    CHECK(keep(store, alice, "y", {cyrillic64}) == 2);
    CHECK_THROWS_WITH(keep(store, alice, "z", {cyrillic64 + "ж"}), Catch::Contains("65 characters"));
    CHECK_THROWS_WITH(keep(store, alice, "z", {"ok", "  "}), Catch::Contains("Tag #2 is empty"));
    CHECK_THROWS_WITH(keep(store, alice, "z", {"line\nbreak"}), Catch::Contains("control character"));
    // Repeated tags (after folding) are kept once.
    const auto dup = keep(store, alice, "dup", {"Same", "same", "SAME "});
    CHECK(find(store, alice, "dup")[0].tags == std::vector<std::string>{"Same"});
    (void)dup;
}

TEST_CASE("a query has at most 32 different words") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    keep(store, alice, "w1");
    std::string q;
    for (int i = 0; i < 33; ++i)
        q += "w" + std::to_string(i) + " ";
    CHECK_THROWS_WITH(find(store, alice, q), Catch::Contains("more than 32 different words"));
    // A query is bounded in bytes before it is cut into words.
    std::string huge;
    for (int i = 0; huge.size() <= 70 * 1024; ++i)
        huge += "w" + std::to_string(i) + " ";
    CHECK_THROWS_WITH(find(store, alice, huge), Catch::Contains("bytes; recall takes up to 65536"));
    std::string repeated;
    for (int i = 0; i < 100; ++i)
        repeated += "w1 ";
    CHECK(find(store, alice, repeated).size() == 1);
}

TEST_CASE("recall limit defaults to 10 and is capped at 50") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    for (int i = 0; i < 60; ++i)
        keep(store, alice, "note number " + std::to_string(i));
    CHECK(find(store, alice, "").size() == 10);
    CHECK(find(store, alice, "note").size() == 10);
    CHECK(find(store, alice, "", {}, 100).size() == 50);
    CHECK(find(store, alice, "note", {}, 100).size() == 50);
    CHECK(find(store, alice, "", {}, 3).size() == 3);
}

TEST_CASE("card numbers are refused, other numbers are kept") {
    CHECK(passes_luhn("4111111111111111"));
    CHECK_FALSE(passes_luhn("4111111111111112"));
    CHECK(find_card_number("pay with 4111 1111 1111 1111 today") == std::optional<std::string>("1111"));
    CHECK(find_card_number("5500-0000-0000-0004") == std::optional<std::string>("0004"));
    CHECK(find_card_number("amex 378282246310005.") == std::optional<std::string>("0005"));
    CHECK_FALSE(find_card_number("4111 1111 1111 1112"));     // fails Luhn
    CHECK_FALSE(find_card_number("+7 999 123-45-67"));        // a phone: too few digits
    CHECK_FALSE(find_card_number("до 31.12.2025, счёт 42"));  // dates and small numbers
    CHECK_FALSE(find_card_number("41111111111111111111111")); // 23 digits: not a card

    TempDatabase tmp;
    NoteStore store(tmp.settings());
    CHECK_THROWS_WITH(keep(store, alice, "карта 4111 1111 1111 1111"), Catch::Contains("card number") &&
                                                                           Catch::Contains("1111") &&
                                                                           !Catch::Contains("4111 1111 1111 1111"));
    CHECK(find(store, alice, "").empty());
    CHECK_THROWS_WITH(keep(store, alice, "the card", {"4111 1111 1111 1111"}),
                      Catch::Contains("tag") && Catch::Contains("1111") && !Catch::Contains("4111 1111"));
    CHECK(find(store, alice, "").empty());
    CHECK(keep(store, alice, "order 4111 1111 1111 1112") == 1);
}

TEST_CASE("card numbers are found whatever separates their digits and whatever script writes them") {
    const std::optional<std::string> ends_1111("1111");
    for (const char* text : {
             "4111\u00A01111\u00A01111\u00A01111",       // no-break spaces
             "4111\u202F1111\u202F1111\u202F1111",       // narrow no-break spaces
             "4111\u20071111\u30001111\u20031111",       // figure, ideographic and em spaces
             "4111.1111.1111.1111",                      // dots
             "4111  1111 -- 1111 . 1111",                // doubled and mixed separators
             "4111\t1111\t1111\t1111",                   // tabs
             "4111\u200B1111\u200C1111\u200D1111",       // zero-width space, non-joiner, joiner
             "41\u206011\u00AD1111\uFEFF1111\u200E1111", // word joiner, soft hyphen, BOM, LRM
             "4111\u20131111\u20141111\u22121111",       // en dash, em dash, minus sign
             "4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",          // one digit at a time
             "\u0664\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 "
             "\u0661\u0661\u0661\u0661", // Arabic-Indic digits
             "\u096A\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967"
             "\u0967", // Devanagari digits
             "\uFF14\uFF11\uFF11\uFF11\uFF0D\uFF11\uFF11\uFF11\uFF11\uFF0D\uFF11\uFF11\uFF11\uFF11\uFF0D"
             "\uFF11\uFF11\uFF11\uFF11", // fullwidth digits and hyphens
             "\u06F4\u0661\u09E7\u0E51 1111 \U0001D7CF\U0001D7CF\U0001D7CF\U0001D7CF 1111", // mixed scripts
             "paid 01.03.2024 with 4111 1111 1111 1111", // a date beside it changes nothing
         }) {
        INFO(text);
        CHECK(find_card_number(text) == ends_1111);
    }
    CHECK(find_card_number("3782\u00A0822463\u00A010005") == std::optional<std::string>("0005"));
}

TEST_CASE("ordinary text, dates and addresses are not card numbers") {
    for (const char* text : {
             "4111\u00A01111\u00A01111\u00A01112", // fails Luhn, however it is written
             "\u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661"
             "\u0662",                       // the same in Arabic-Indic digits
             "01.03.2024 - 08.04.2024",      // a date range: its digits would pass Luhn
             "2024-03-01 \u2013 2024-04-08", // the same, ISO dates and an en dash
             "192.168.1.2 10.0.0.15",        // two IPv4 addresses: their digits would pass Luhn
             "4111\n1111\n1111\n1111",       // four numbers on four lines
             "Call +7 999 123-45-67, room 12, 3rd floor, since 2024.", "Order 42 of 31.12.2025 costs 1 234,50.",
             "41111111111111111111111",                                // 23 digits: some other number
             "4111\u00A01111\u00A01111\u00A01111\u00A01111\u00A01111", // 24 digits in groups
         }) {
        INFO(text);
        CHECK_FALSE(find_card_number(text));
    }
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    CHECK_THROWS_AS(keep(store, alice, "card 4111\u200B1111\u200B1111\u200B1111"), CardNumberInNote);
    CHECK(keep(store, alice, "holiday 01.03.2024 - 08.04.2024") == 1);
}

TEST_CASE("critical notes: flagged, returned, marked read per owner") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto plain = keep(store, alice, "ordinary");
    const auto critical = keep(store, alice, "never ship on Friday", {"rules"}, true);
    CHECK(ids(store.critical_notes(alice)) == std::vector<int64_t>{critical});
    CHECK(store.unread_critical(alice) == std::vector<int64_t>{critical});

    find(store, alice, "ordinary"); // does not return it: still unread
    CHECK(store.unread_critical(alice) == std::vector<int64_t>{critical});

    const auto got = find(store, alice, "friday");
    REQUIRE(got.size() == 1);
    CHECK(got[0].critical);
    CHECK(store.unread_critical(alice).empty());
    CHECK(ids(store.critical_notes(alice)) == std::vector<int64_t>{critical});
    (void)plain;

    const auto second = keep(store, alice, "second rule", {}, true);
    CHECK(store.unread_critical(alice) == std::vector<int64_t>{second});
    CHECK(store.forget(alice, second));
    CHECK(store.unread_critical(alice).empty());
    CHECK(ids(store.critical_notes(alice)) == std::vector<int64_t>{critical});
}

TEST_CASE("more critical notes than a recall returns are all read after a few recalls, unread ones first") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    for (int i = 0; i < 55; ++i)
        keep(store, alice, "rule number " + std::to_string(i), {"rules"}, true);
    RecallQuery critical{"", {}, 50, true};
    const auto first = store.recall(alice, critical);
    CHECK(first.size() == 50);
    CHECK(store.unread_critical(alice).size() == 5);
    // The next recall shows the five the first could not, newest first.
    const auto second = store.recall(alice, critical);
    REQUIRE(second.size() == 50);
    CHECK(store.unread_critical(alice).empty());
    CHECK(std::is_sorted(second.begin(), second.end(), [](const Note& a, const Note& b) { return a.id > b.id; }));
    bool oldest_shown = false;
    for (const auto& note : second)
        oldest_shown = oldest_shown || note.id == 1;
    CHECK(oldest_shown);
    // The same with a tag.
    keep(store, alice, "one more", {"rules"}, true);
    RecallQuery tagged{"", {"rules"}, 1, true};
    CHECK(ids(store.recall(alice, tagged)) == std::vector<int64_t>{56});
    CHECK(store.unread_critical(alice).empty());
}

TEST_CASE("recall can ask for the critical notes only, with or without words and tags") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto first = keep(store, alice, "close the till at six", {"rules"}, true);
    keep(store, alice, "the till sticks", {"rules"});
    const auto second = keep(store, alice, "never refund cash", {}, true);
    keep(store, bob, "bob's own rule", {}, true);

    RecallQuery all{"", {}, 0, true};
    CHECK(ids(store.recall(alice, all)) == std::vector<int64_t>{second, first});
    RecallQuery words{"till", {}, 0, true};
    CHECK(ids(store.recall(alice, words)) == std::vector<int64_t>{first});
    RecallQuery tagged{"", {"rules"}, 0, true};
    CHECK(ids(store.recall(alice, tagged)) == std::vector<int64_t>{first});
    CHECK(store.unread_critical(alice).empty());
    CHECK(store.unread_critical(bob).size() == 1);
}

TEST_CASE("one principal's notes for two stores never mix") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const Owner shop_a{"alice", "shop-a"};
    const Owner shop_b{"alice", "shop-b"};
    CHECK(keep(store, shop_a, "supplier in shop a", {}, true) == 1);
    CHECK(find(store, shop_b, "supplier").empty());
    CHECK(find(store, alice, "supplier").empty());
    CHECK(store.critical_notes(shop_b).empty());
    CHECK(keep(store, shop_b, "supplier in shop b") == 1);
    REQUIRE(find(store, shop_a, "supplier").size() == 1);
    CHECK(find(store, shop_a, "supplier")[0].text == "supplier in shop a");
    CHECK_FALSE(store.forget(shop_b, 2));
    CHECK(store.forget_all(shop_b) == 1);
    CHECK(ids(store.critical_notes(shop_a)) == std::vector<int64_t>{1});
}

TEST_CASE("schema is versioned, notes survive reopening, a newer database is refused") {
    TempDatabase tmp;
    {
        NoteStore store(tmp.settings());
        CHECK(store.schema_version() == (tmp.schema.empty() ? kSchemaVersion : kPostgresSchemaVersion));
        keep(store, alice, "persisted note");
    }
    {
        NoteStore store(tmp.settings());
        CHECK(ids(find(store, alice, "persisted")) == std::vector<int64_t>{1});
    }
    if (tmp.schema.empty()) {
        CHECK(sql(tmp, "PRAGMA journal_mode") == "wal");
        sql(tmp, "PRAGMA user_version = 99");
    } else {
        sql(tmp, "UPDATE memory_schema SET version = 99");
    }
    CHECK_THROWS_WITH(NoteStore(tmp.settings()), Catch::Contains("schema version 99"));
}

TEST_CASE("many threads remember and recall at once") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    constexpr int kThreads = 8;
    constexpr int kEach = 100;
    std::vector<std::vector<int64_t>> got(kThreads);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            const Owner owner{t % 2 ? "alice" : "bob", ""};
            try {
                for (int i = 0; i < kEach; ++i) {
                    got[t].push_back(keep(store, owner, "thread " + std::to_string(t) + " note " + std::to_string(i),
                                          {"t" + std::to_string(t)}));
                    if (i % 10 == 0) find(store, owner, "note thread");
                }
            } catch (...) {
                ++failures;
            }
        });
    for (auto& th : threads)
        th.join();
    CHECK(failures == 0);
    for (const char* who : {"alice", "bob"}) {
        std::set<int64_t> all;
        for (int t = 0; t < kThreads; ++t)
            if ((t % 2 ? "alice" : "bob") == std::string(who)) all.insert(got[t].begin(), got[t].end());
        CHECK(all.size() == kThreads / 2 * kEach); // no number handed out twice
        CHECK(*all.begin() == 1);
        CHECK(*all.rbegin() == kThreads / 2 * kEach);
    }
    CHECK(find(store, alice, "", {"t1"}, 50).size() == 50);
    CHECK(find(store, bob, "", {"t1"}, 50).empty());
}

TEST_CASE("words match by stem in Russian and English, an exact form ranking first") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    const auto contract = keep(store, alice, "Договор с ООО Ромашка до 31.12");
    const auto invoices = keep(store, alice, "Sent the invoices for both contracts");
    const auto other = keep(store, alice, "Позвонить маме в субботу");

    // The seed's own words still find it, and every form of a word does too.
    CHECK(ids(find(store, alice, "договор")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "договора")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "ДОГОВОРОВ")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "ромашки")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "contract")) == std::vector<int64_t>{invoices});
    CHECK(ids(find(store, alice, "invoice")) == std::vector<int64_t>{invoices});
    CHECK(ids(find(store, alice, "sending")).empty()); // "send" is not "sent": Snowball stems, it does not lemmatise
    CHECK(ids(find(store, alice, "субботы")) == std::vector<int64_t>{other});
    // Numbers and mixed words are kept whole.
    CHECK(ids(find(store, alice, "31")) == std::vector<int64_t>{contract});
    CHECK(ids(find(store, alice, "3")).empty());

    // A note with the asked form itself ranks above one with another form,
    // although the other is newer.
    const auto exact = keep(store, bob, "договора подписаны");
    const auto stem_only = keep(store, bob, "договоры подписаны");
    CHECK(ids(find(store, bob, "договора")) == std::vector<int64_t>{exact, stem_only});
    CHECK(ids(find(store, bob, "договоры")) == std::vector<int64_t>{stem_only, exact});
    // Tags are matched by stem as well.
    const auto tagged = keep(store, bob, "встреча во вторник", {"Контракты"});
    CHECK(ids(find(store, bob, "контракт")) == std::vector<int64_t>{tagged});
}

TEST_CASE("a stemmer library that cannot be had is named, with the setting that does without it") {
    // The library this family was built against is here: nothing to say.
    CHECK_FALSE(memory::libstemmer_problem());
    // Neither a file at the path nor a library by the soname.
    const auto missing =
        memory::stemmer_library_problem("libgatehouse-no-stemmer.so.0", "/nonexistent/libgatehouse-no-stemmer.so.0");
    REQUIRE(missing);
    CHECK_THAT(*missing, Catch::Contains("libgatehouse-no-stemmer.so.0") && Catch::Contains("install libstemmer") &&
                             Catch::Contains("stemming: none"));
    // A file at the path is enough, and is not opened (this one is no library).
    const auto here = std::filesystem::temp_directory_path() / "gatehouse-not-a-library.so";
    { std::ofstream(here) << "not ELF"; }
    CHECK_FALSE(memory::stemmer_library_problem("libgatehouse-no-stemmer.so.0", here.c_str()));
    std::filesystem::remove(here);
}

TEST_CASE("stemming follows the settings, and a changed setting rebuilds the index") {
    TempDatabase tmp;
    auto plain = tmp.settings();
    plain.stemming = {"", ""};
    {
        NoteStore store(plain);
        keep(store, alice, "Договор с ООО Ромашка до 31.12");
        keep(store, alice, "two contracts signed");
        CHECK(find(store, alice, "договора").empty());
        CHECK(find(store, alice, "contract").empty());
        CHECK(ids(find(store, alice, "contracts")) == std::vector<int64_t>{2});
    }
    {
        auto russian_only = tmp.settings();
        russian_only.stemming.latin = "";
        NoteStore store(russian_only);
        CHECK(ids(find(store, alice, "договора")) == std::vector<int64_t>{1});
        CHECK(find(store, alice, "contract").empty());
    }
    {
        NoteStore store(tmp.settings());
        CHECK(ids(find(store, alice, "договора")) == std::vector<int64_t>{1});
        CHECK(ids(find(store, alice, "contract")) == std::vector<int64_t>{2});
        keep(store, alice, "a third contract");
        CHECK(ids(find(store, alice, "contracts")) == std::vector<int64_t>{2, 3});
    }
    CHECK_THROWS_WITH(WordStemmer(Stemming{"klingon", ""}), Catch::Contains("klingon"));
    CHECK_THROWS_WITH(WordStemmer(Stemming{"russian", ""}), Catch::Contains("latin"));
}

// The index as versions 1 and 2 wrote it (text and tags, tokenized as
// `tokenize` says, no owner token), in place of the current one.
std::string index_of_text_and_tags(const std::string& tokenize) {
    return R"(
        DROP TRIGGER notes_fts_insert; DROP TRIGGER notes_fts_delete; DROP TABLE notes_fts;
        ALTER TABLE notes DROP COLUMN owner_token;
        CREATE VIRTUAL TABLE notes_fts USING fts5(text, tags, content = 'notes', content_rowid = 'id',
            tokenize = ')" +
           tokenize + R"(');
        CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
            INSERT INTO notes_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags); END;
        CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
            INSERT INTO notes_fts (notes_fts, rowid, text, tags) VALUES ('delete', old.id, old.text, old.tags); END;
        INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
    )";
}

TEST_CASE("a version 2 file is migrated: its index holds each note's owner, and recall finds what it found",
          "[sqlite]") {
    TempDatabase tmp;
    {
        NoteStore store(tmp.settings());
        keep(store, alice, "the lamp in the hall");
        keep(store, bob, "bob's lamp");
        keep(store, alice, "another lamp, upstairs");
    }
    // Back to what version 2 wrote: an index of text and tags alone.
    sql(tmp, (index_of_text_and_tags("gatehouse latin english cyrillic russian") + "PRAGMA user_version = 2;").c_str());
    NoteStore store(tmp.settings());
    CHECK(store.schema_version() == kSchemaVersion);
    CHECK(sql(tmp, "SELECT count(*) FROM notes WHERE owner_token = 'owner' || owner_id") == "3");
    CHECK(ids(find(store, alice, "lamps")) == std::vector<int64_t>{2, 1});
    CHECK(ids(find(store, bob, "lamp")) == std::vector<int64_t>{1});
    // Written and forgotten after: the index follows.
    const auto third = keep(store, alice, "a lamp in the attic");
    CHECK(ids(find(store, alice, "attic")) == std::vector<int64_t>{third});
    CHECK(store.forget(alice, third));
    CHECK(find(store, alice, "attic").empty());
    CHECK(find(store, bob, "attic").empty());
}

TEST_CASE("a version 1 file is migrated: its notes are found by stem and counted per owner", "[sqlite]") {
    TempDatabase tmp;
    {
        NoteStore store(tmp.settings());
        keep(store, alice, "Договор с ООО Ромашка до 31.12");
        keep(store, bob, "договор аренды");
    }
    // Back to what version 1 wrote: a unicode61 index, no term counts.
    sql(tmp, ("DROP TABLE owner_terms;" + index_of_text_and_tags("unicode61 remove_diacritics 2") +
              "PRAGMA user_version = 1;")
                 .c_str());
    NoteStore store(tmp.settings());
    CHECK(store.schema_version() == kSchemaVersion);
    CHECK(ids(find(store, alice, "договоров")) == std::vector<int64_t>{1});
    CHECK(ids(find(store, bob, "договоров")) == std::vector<int64_t>{1});
    CHECK(sql(tmp, "SELECT notes FROM owner_terms t JOIN owners o ON o.id = t.owner_id "
                   "WHERE o.subject = 'alice' AND t.term = 'договор'") == "1");
}

TEST_CASE("the owners' term counts follow every write") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    // The stem term, kStemMarker then "contract", in SQL both backends read.
    const char* count_contract = "SELECT coalesce((SELECT notes FROM owner_terms t JOIN owners o ON o.id = t.owner_id "
                                 "WHERE o.subject = 'alice' AND length(t.term) = 9 AND substr(t.term, 2) = "
                                 "'contract'), 0)";
    const auto one = keep(store, alice, "contract one, contracts two");
    keep(store, alice, "another contract");
    keep(store, bob, "bob's contract");
    CHECK(sql(tmp, count_contract) == "2"); // notes, not hits; Bob's not among them
    CHECK(store.forget(alice, one));
    CHECK(sql(tmp, count_contract) == "1");
    // A word whose last note goes leaves no count behind (PostgreSQL's forget
    // decremented it to 0 and kept the row).
    const char* count_zebra = "SELECT count(*) FROM owner_terms t JOIN owners o ON o.id = t.owner_id "
                              "WHERE o.subject = 'alice' AND t.term = 'zebra'";
    const auto zebra = keep(store, alice, "a zebra crossing");
    CHECK(sql(tmp, count_zebra) == "1");
    CHECK(store.forget(alice, zebra));
    CHECK(sql(tmp, count_zebra) == "0");
    CHECK(store.forget_all(alice) == 1);
    CHECK(sql(tmp, "SELECT count(*) FROM owner_terms t JOIN owners o ON o.id = t.owner_id "
                   "WHERE o.subject = 'alice'") == "0");
    CHECK(sql(tmp, "SELECT count(*) FROM owner_terms t JOIN owners o ON o.id = t.owner_id "
                   "WHERE o.subject = 'bob'") != "0");
}

TEST_CASE("a word in most of the owner's notes is looked for in its newest ones only, a rare one everywhere") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    // The oldest note says "lamp" five times: over all notes it would rank first.
    const auto oldest = keep(store, alice, "lamp lamp lamp lamp lamp, and a zeppelin", {"attic"});
    const auto oldest_critical = keep(store, alice, "lamp lamp lamp lamp: never leave it on", {}, true);
    for (std::size_t i = 0; i < kCandidatesPerWord + 200; ++i)
        keep(store, alice, "lamp note number " + std::to_string(i));
    const auto newest = keep(store, alice, "the last lamp");

    const auto found = ids(find(store, alice, "lamp", {}, 50));
    REQUIRE(found.size() == 50);
    CHECK(std::find(found.begin(), found.end(), oldest) == found.end());
    CHECK(std::find(found.begin(), found.end(), newest) != found.end());
    // A rare word is looked for in every note, old ones too, and the common
    // word beside it does not push that note out.
    CHECK(ids(find(store, alice, "zeppelin")) == std::vector<int64_t>{oldest});
    CHECK(ids(find(store, alice, "lamp zeppelin", {}, 1)) == std::vector<int64_t>{oldest});
    // The newest notes counted are those the tags or the critical flag let
    // through, so an old note is found among few such notes.
    CHECK(ids(find(store, alice, "lamp", {"attic"})) == std::vector<int64_t>{oldest});
    CHECK(find(store, alice, "lamp", {"cellar"}).empty()); // a tag none of its notes has
    CHECK(ids(store.recall(alice, RecallQuery{"lamp", {}, 0, true})) == std::vector<int64_t>{oldest_critical});
    CHECK(store.unread_critical(alice).empty());
    // An owner with few such notes is searched whole.
    for (int i = 0; i < 20; ++i)
        keep(store, bob, "lamp " + std::to_string(i));
    const auto bob_oldest = keep(store, bob, "lamp lamp lamp lamp lamp");
    CHECK(ids(find(store, bob, "lamp", {}, 1)) == std::vector<int64_t>{bob_oldest});
}

TEST_CASE("the check reads the whole database and names what disagrees") {
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    keep(store, alice, "договор с ООО Ромашка");
    keep(store, bob, "two contracts");
    auto report = store.check();
    CHECK(report.problems.empty());
    CHECK(report.notes == 2);
    CHECK(report.owners == 2);
    sql(tmp, "UPDATE owner_terms SET notes = 7 WHERE term = 'two'");
    sql(tmp, "UPDATE owners SET note_count = 5 WHERE subject = 'alice'");
    report = store.check();
    REQUIRE(report.problems.size() == 2);
    CHECK_THAT(report.problems[0], Catch::Contains("counts 5 notes but has 1"));
    CHECK_THAT(report.problems[1], Catch::Contains("1 of the owners' term counts"));
}

namespace {

// `scripts/postgres.sh ACTION DIR` for the server the PostgreSQL pass uses
// (GATEHOUSE_TEST_POSTGRES_CONTROL is "SCRIPT DIR").
void postgres_server(const char* action) {
    const char* control = std::getenv("GATEHOUSE_TEST_POSTGRES_CONTROL");
    REQUIRE(control != nullptr);
    std::string command(control);
    const auto space = command.find(' ');
    command = command.substr(0, space) + " " + action + command.substr(space) + " >/dev/null";
    REQUIRE(std::system(command.c_str()) == 0);
}

} // namespace

TEST_CASE("PostgreSQL down: a clear error, then the store reconnects by itself", "[postgresql]") {
    if (!postgres_url() || !std::getenv("GATEHOUSE_TEST_POSTGRES_CONTROL")) return; // the SQLite pass
    TempDatabase tmp;
    NoteStore store(tmp.settings());
    keep(store, alice, "before the restart");
    // Every pooled connection dies with the server.
    postgres_server("stop");
    CHECK_THROWS_AS(keep(store, alice, "while it is down"), NotesUnavailable);
    CHECK_THROWS_AS(find(store, alice, "restart"), NotesUnavailable);
    try {
        keep(store, alice, "while it is down");
    } catch (const NotesUnavailable& e) {
        // The URL is named, its password never.
        CHECK_THAT(e.what(), Catch::Contains("***") && !Catch::Contains("gatehouse-test-password"));
    }
    postgres_server("start");
    CHECK(ids(find(store, alice, "restart")) == std::vector<int64_t>{1});
    CHECK(keep(store, alice, "after the restart") == 2);
    // Connections idle in the pool across a restart are dropped unused, so the
    // first call after it does not fail either.
    postgres_server("stop");
    postgres_server("start");
    CHECK(ids(find(store, alice, "after")) == std::vector<int64_t>{2});
}

namespace {

// The storage options of one of the test database's tables, as "name=value,...".
std::string table_options(const TempDatabase& tmp, const std::string& table) {
    return sql(tmp, ("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = '" + table +
                     "' AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())")
                        .c_str());
}

} // namespace

TEST_CASE("PostgreSQL and SQLite find the same candidates with the same counts, so rank alike", "[postgresql]") {
    if (!postgres_url()) return; // the SQLite pass
    TempDatabase tmp;
    NoteStore postgres(tmp.settings());
    StoreSettings file;
    file.database_path = (tmp.dir / "ranked.db").string();
    NoteStore sqlite(file);
    // Words that share stems (so exact and stem hits mix), in both scripts,
    // and fillers, so notes differ in length, repeats and which forms they
    // hold; tags and critical flags for the filters.
    const std::vector<std::string> words = {"run",   "runs",  "running", "runner", "lamp",   "lamps", "кошка",
                                            "кошки", "кошку", "дом",     "дома",   "garden", "paper", "river",
                                            "stone", "light", "красный", "синий",  "window", "bread"};
    const std::vector<std::string> tags = {"home", "work", "травы"};
    std::mt19937 random(20261205);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
    for (int i = 0; i < 300; ++i) {
        std::string text;
        const std::size_t length = 1 + pick(24);
        for (std::size_t w = 0; w < length; ++w)
            text += (w ? " " : "") + words[pick(words.size())];
        std::vector<std::string> on;
        for (const auto& tag : tags)
            if (pick(3) == 0) on.push_back(tag);
        const bool critical = pick(15) == 0;
        REQUIRE(keep(postgres, alice, text, on, critical) == keep(sqlite, alice, text, on, critical));
    }
    keep(postgres, bob, "run run run lamp");
    keep(sqlite, bob, "run run run lamp");
    for (int q = 0; q < 80; ++q) {
        RecallQuery query;
        const std::size_t count = 1 + pick(3);
        for (std::size_t w = 0; w < count; ++w)
            query.query += (w ? " " : "") + words[pick(words.size())];
        if (pick(4) == 0) query.tags = {tags[pick(tags.size())]};
        query.critical_only = pick(8) == 0;
        query.limit = std::array{5, 10, 50}[pick(3)];
        INFO("query \"" << query.query << "\", " << query.tags.size() << " tags, critical only " << query.critical_only
                        << ", limit " << query.limit);
        CHECK(ids(postgres.recall(alice, query)) == ids(sqlite.recall(alice, query)));
    }
}

TEST_CASE("PostgreSQL: a version 1 database gets version 2's vacuum settings at the next start", "[postgresql]") {
    if (!postgres_url()) return; // the SQLite pass
    TempDatabase tmp;
    {
        NoteStore store(tmp.settings());
        keep(store, alice, "made at version 2");
    }
    sql(tmp,
        "ALTER TABLE note_terms RESET (autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_insert_threshold); "
        "ALTER TABLE note_tags RESET (autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_insert_threshold); "
        "UPDATE memory_schema SET version = 1");
    CHECK(table_options(tmp, "note_terms").empty());
    NoteStore store(tmp.settings());
    CHECK(store.schema_version() == kPostgresSchemaVersion);
    for (const char* table : {"note_terms", "note_tags"})
        CHECK(table_options(tmp, table) ==
              "autovacuum_vacuum_insert_scale_factor=0,autovacuum_vacuum_insert_threshold=1000");
    CHECK(ids(find(store, alice, "version")) == std::vector<int64_t>{1});
    // The version the migration checks is the one the server reports.
    CHECK(PgConnection(tmp.database()).server_version() == std::stoi(sql(tmp, "SHOW server_version_num")));
}

TEST_CASE("PostgreSQL: autovacuum takes a big index's newest rows after a thousand, not after a fifth of the table",
          "[postgresql]") {
    // Recall reads the newest notes' entries of note_terms by index-only
    // scans, which read the table too for every entry no vacuum has marked
    // visible yet.
    if (!postgres_url()) return; // the SQLite pass
    TempDatabase tmp;
    {
        INFO("start the test's server with GATEHOUSE_PG_SERVER_OPTIONS='-c autovacuum_naptime=1', as ctest does");
        REQUIRE(sql(tmp, "SELECT current_setting('autovacuum_naptime')") == "1s");
    }
    const auto terms_stat = [&](const std::string& column) {
        return std::stoll(sql(tmp, ("SELECT " + column + " FROM pg_stat_user_tables WHERE schemaname = '" + tmp.schema +
                                    "' AND relname = 'note_terms'")
                                       .c_str()));
    };
    // 20 terms a note (words with a digit have no stem), by a store closed
    // afterwards: a backend reports its counts when it exits (before
    // PostgreSQL 15, an idle one might keep them until then).
    const auto keep_notes = [&](int from, int count) {
        NoteStore store(tmp.settings());
        for (int i = from; i < from + count; ++i) {
            std::string text;
            for (int w = 0; w < 20; ++w)
                text += "n" + std::to_string(i) + "w" + std::to_string(w) + " ";
            keep(store, alice, text);
        }
    };
    const auto wait_for = [&](const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
    };
    keep_notes(0, 1000);
    // A table of 20 000 rows, every one of them counted, then vacuumed, so
    // no late count of them can start a vacuum afterwards. PostgreSQL's
    // default would now wait for more than 1000 + 20 000 / 5 = 5000 new rows.
    wait_for([&] { return terms_stat("n_tup_ins") >= 20000; });
    REQUIRE(terms_stat("n_tup_ins") == 20000);
    sql(tmp, "VACUUM note_terms");
    keep_notes(1000, 125); // 2 500 rows
    // Vacuumed once more than 1000 are counted (the launcher looks every second).
    wait_for([&] { return terms_stat("n_tup_ins") == 22500 && terms_stat("n_ins_since_vacuum") <= 1000; });
    INFO("rows not yet vacuumed: " << terms_stat("n_ins_since_vacuum"));
    CHECK(terms_stat("n_tup_ins") == 22500);
    CHECK(terms_stat("n_ins_since_vacuum") <= 1000);
}

TEST_CASE("a PostgreSQL server older than 13 is named, with the version the notes need") {
    CHECK_FALSE(unsupported_postgres(130000));
    CHECK_FALSE(unsupported_postgres(150004));
    REQUIRE(unsupported_postgres(120011));
    CHECK(*unsupported_postgres(120011) ==
          "the notes database's server is PostgreSQL 12.11; the memory family needs PostgreSQL 13 or newer (its "
          "schema sets autovacuum_vacuum_insert_scale_factor): upgrade the server, or keep the notes in a SQLite "
          "file");
    CHECK_THAT(*unsupported_postgres(90624), Catch::Contains("PostgreSQL 9.6;"));
}

TEST_CASE("a PostgreSQL URL is logged without its password") {
    CHECK(memory::redacted_postgres_url("postgresql://ann:s3cret@db.example:5432/notes?sslmode=require") ==
          "postgresql://ann:***@db.example:5432/notes?sslmode=require");
    CHECK(memory::redacted_postgres_url("postgresql://ann@db/notes") == "postgresql://ann@db/notes");
    CHECK(memory::redacted_postgres_url("postgresql:///notes?host=/run/pg") == "postgresql:///notes?host=/run/pg");
}

TEST_CASE("a PostgreSQL server down at start: the store is made, its calls say the notes are unavailable") {
    StoreSettings settings;
    settings.database_path = "postgresql://gatehouse:some-password@/notes?host=/nonexistent-gatehouse-dir&port=1";
    NoteStore store(settings);
    CHECK_THROWS_AS(keep(store, alice, "nowhere to keep it"), NotesUnavailable);
    CHECK_THROWS_WITH(find(store, alice, "anything"), !Catch::Contains("some-password"));
}
