#include "state/state_backend.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace gatehouse;
using namespace std::chrono_literals;

TEMPLATE_TEST_CASE("take answers a live value once, then nothing", "[state]", std::true_type, std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());

    backend->put("code/abc", "session-1", 0ms);
    backend->put("code/other", "session-2", 0ms);
    CHECK(backend->take("code/abc") == std::optional<std::string>("session-1"));
    CHECK_FALSE(backend->take("code/abc"));
    CHECK_FALSE(backend->get("code/abc"));
    CHECK_FALSE(backend->take("code/never"));
    CHECK(backend->get("code/other") == std::optional<std::string>("session-2"));

    SECTION("an empty value is still a value") {
        backend->put("code/empty", "", 0ms);
        CHECK(backend->take("code/empty") == std::optional<std::string>(""));
        CHECK_FALSE(backend->take("code/empty"));
    }
    SECTION("an expired key gives nothing, and stays gone") {
        backend->put("code/short", "late", 20ms);
        std::this_thread::sleep_for(60ms);
        CHECK_FALSE(backend->take("code/short"));
        backend->put("code/short", "again", 0ms);
        CHECK(backend->take("code/short") == std::optional<std::string>("again"));
    }
    SECTION("a key put again after a take can be taken again") {
        backend->put("code/abc", "session-3", 60000ms);
        CHECK(backend->take("code/abc") == std::optional<std::string>("session-3"));
    }
}

TEMPLATE_TEST_CASE("add writes only where no live key is", "[state]", std::true_type, std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());
    CHECK(backend->add("index", "[1]", 0ms));
    CHECK_FALSE(backend->add("index", "[2]", 0ms));
    CHECK(backend->get("index") == std::optional<std::string>("[1]"));
    backend->put("brief", "old", 500ms); // long enough to be live still on a loaded machine
    CHECK_FALSE(backend->add("brief", "new", 0ms));
    std::this_thread::sleep_for(600ms);
    CHECK(backend->add("brief", "new", 0ms)); // an expired key is no key
    CHECK(backend->get("brief") == std::optional<std::string>("new"));
    // Of many threads adding at once, one writes.
    std::atomic<int> won{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            if (backend->add("race", std::to_string(t), 0ms)) ++won;
        });
    for (auto& thread : threads)
        thread.join();
    CHECK(won == 1);
}

TEMPLATE_TEST_CASE("a TTL longer than the clock can count keeps the value", "[state]", std::true_type,
                   std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());
    // What a plugin's "a very long time" becomes (host_api caps a TTL at
    // INT64_MAX / 2 ms): in nanoseconds past now it overflows, which once
    // expired the value at once.
    const std::chrono::milliseconds forever(std::numeric_limits<std::int64_t>::max() / 2);
    backend->put("long/put", "kept", forever);
    CHECK(backend->get("long/put") == std::optional<std::string>("kept"));
    backend->put("long/replaced", "first", 0ms);
    REQUIRE(backend->replace("long/replaced", "first", "second", forever));
    CHECK(backend->get("long/replaced") == std::optional<std::string>("second"));
    CHECK(backend->take("long/put") == std::optional<std::string>("kept"));
}

TEST_CASE("memory take: many threads, one winner per key", "[state]") {
    auto backend = state::make_memory_backend();
    constexpr int kKeys = 50, kThreads = 8;
    for (int i = 0; i < kKeys; ++i)
        backend->put("k" + std::to_string(i), std::to_string(i), 0ms);
    std::vector<std::atomic<int>> winners(kKeys);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kKeys; ++i)
                if (auto v = backend->take("k" + std::to_string(i)); v && *v == std::to_string(i)) ++winners[i];
        });
    for (auto& t : threads)
        t.join();
    for (int i = 0; i < kKeys; ++i)
        CHECK(winners[i].load() == 1);
}

// Two instances of the host pointed at one SQLite file each open their own
// connection; every take on either must still have exactly one winner.
TEST_CASE("SQLite take: two backends on one file, many threads, exactly one winner per key each round", "[state]") {
    test::TempDir dir;
    const auto file = (dir.path() / "shared.sqlite3").string();
    auto first = state::make_sqlite_backend(file);
    auto second = state::make_sqlite_backend(file);
    state::StateBackend* backends[] = {first.get(), second.get()};

    constexpr int kRounds = 20, kKeys = 10, kThreadsPerBackend = 4;
    for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kKeys; ++i)
            backends[i % 2]->put("code/" + std::to_string(i), "r" + std::to_string(round), 60000ms);
        std::vector<std::atomic<int>> winners(kKeys);
        std::atomic<int> failures{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (int t = 0; t < 2 * kThreadsPerBackend; ++t)
            threads.emplace_back([&, t] {
                state::StateBackend* backend = backends[t % 2];
                while (!go.load())
                    std::this_thread::yield();
                // Each thread walks the keys from its own starting point, so
                // takers of one key meet on both connections.
                for (int n = 0; n < kKeys; ++n) {
                    const int i = (n + t) % kKeys;
                    try {
                        auto v = backend->take("code/" + std::to_string(i));
                        if (v && *v == "r" + std::to_string(round)) ++winners[i];
                    } catch (const state::BackendError&) {
                        ++failures;
                    }
                }
            });
        go = true;
        for (auto& t : threads)
            t.join();
        INFO("round " << round);
        REQUIRE(failures.load() == 0);
        for (int i = 0; i < kKeys; ++i) {
            INFO("key " << i);
            REQUIRE(winners[i].load() == 1);
        }
        for (int i = 0; i < kKeys; ++i)
            REQUIRE_FALSE(backends[(i + 1) % 2]->get("code/" + std::to_string(i)));
    }
}

TEMPLATE_TEST_CASE("replace writes only over the value it expects", "[state]", std::true_type, std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());
    CHECK_FALSE(backend->replace("k", "", "v1", 0ms)); // nothing to replace
    CHECK_FALSE(backend->get("k"));
    backend->put("k", "v1", 0ms);
    CHECK_FALSE(backend->replace("k", "v0", "v2", 0ms));
    CHECK(backend->get("k") == std::optional<std::string>("v1"));
    CHECK(backend->replace("k", "v1", "v2", 0ms));
    CHECK(backend->get("k") == std::optional<std::string>("v2"));
    SECTION("the new expiry holds") {
        CHECK(backend->replace("k", "v2", "v3", 20ms));
        std::this_thread::sleep_for(60ms);
        CHECK_FALSE(backend->get("k"));
        CHECK_FALSE(backend->replace("k", "v3", "v4", 0ms)); // expired: gone
    }
}

// Each thread adds one to a counter by read and replace, retrying when
// another came between: no increment may be lost.
TEST_CASE("SQLite replace: two backends on one file, concurrent read-change-writes lose nothing", "[state]") {
    test::TempDir dir;
    const auto file = (dir.path() / "shared.sqlite3").string();
    auto first = state::make_sqlite_backend(file);
    auto second = state::make_sqlite_backend(file);
    state::StateBackend* backends[] = {first.get(), second.get()};
    first->put("counter", "0", 0ms);
    constexpr int kThreads = 4, kIncrements = 50;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kIncrements; ++i)
                for (;;) {
                    try {
                        const auto now = backends[t % 2]->get("counter");
                        if (backends[t % 2]->replace("counter", *now, std::to_string(std::stoi(*now) + 1), 0ms)) break;
                    } catch (const state::BackendError&) {
                        // busy: try again
                    }
                }
        });
    for (auto& t : threads)
        t.join();
    CHECK(first->get("counter") == std::optional<std::string>(std::to_string(kThreads * kIncrements)));
}

TEST_CASE("SQLite: expired rows are swept from the file by later writes, a bounded batch at a time", "[state]") {
    test::TempDir dir;
    const auto file = (dir.path() / "swept.sqlite3").string();
    auto backend = state::make_sqlite_backend(file);
    const auto rows = [&file] {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
        sqlite3_stmt* count = nullptr;
        REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM state", -1, &count, nullptr) == SQLITE_OK);
        REQUIRE(sqlite3_step(count) == SQLITE_ROW);
        const int n = sqlite3_column_int(count, 0);
        sqlite3_finalize(count);
        sqlite3_close(db);
        return n;
    };
    // Keys written once and never read again: before the sweep they stayed
    // in the file for good (only a restart purged them).
    backend->put("kept", "no expiry", 0ms); // the first write sweeps (nothing yet)
    for (int i = 0; i < 600; ++i)
        backend->put("code/" + std::to_string(i), "never redeemed", 1ms);
    REQUIRE(rows() > 100); // a slow machine may have swept some already: a second has passed
    std::this_thread::sleep_for(1100ms);
    backend->put("kept/2", "no expiry", 0ms); // sweeps at most 500
    CHECK(rows() <= 102);
    std::this_thread::sleep_for(1100ms);
    backend->put("kept/3", "no expiry", 0ms);
    CHECK(rows() == 3);
    CHECK(backend->get("kept") == std::optional<std::string>("no expiry"));
}

TEST_CASE("SQLite: a backend's kept statements hold no read open between calls, so each call sees the file now",
          "[state]") {
    test::TempDir dir;
    const auto file = (dir.path() / "shared.sqlite3").string();
    auto reader = state::make_sqlite_backend(file);
    auto writer = state::make_sqlite_backend(file);
    writer->put("session/a", "v0", 0ms);
    writer->put("prefix/1", "p0", 0ms);
    for (int i = 1; i <= 50; ++i) {
        // Every kind of statement the reader keeps, run between two of the writer's changes.
        REQUIRE(reader->get("session/a") == "v" + std::to_string(i - 1));
        const auto listed = reader->scan("prefix/");
        REQUIRE(listed.size() == 1);
        REQUIRE(listed[0].second == "p" + std::to_string(i - 1));
        REQUIRE_FALSE(reader->take("absent/" + std::to_string(i)));
        REQUIRE_FALSE(reader->erase("absent/" + std::to_string(i)));
        REQUIRE_FALSE(reader->replace("absent", "x", "y", 0ms));
        writer->put("session/a", "v" + std::to_string(i), 0ms);
        writer->put("prefix/1", "p" + std::to_string(i), 0ms);
    }
    // A read left open would pin the reader to an old snapshot and keep the
    // writer from folding the WAL back into the database.
    REQUIRE(reader->get("session/a") == "v50");
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    sqlite3_stmt* checkpoint = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &checkpoint, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(checkpoint) == SQLITE_ROW);
    CHECK(sqlite3_column_int(checkpoint, 0) == 0); // not blocked by a reader
    sqlite3_finalize(checkpoint);
    sqlite3_close(db);
}
