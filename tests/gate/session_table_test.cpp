#include "session/session_table.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <latch>
#include <set>
#include <thread>
#include <unistd.h>

using namespace gatehouse;
using session::SessionDraft;
using session::SessionTable;

namespace {

SessionDraft draft(std::string principal, std::string topic) {
    SessionDraft d;
    d.principal = std::move(principal);
    d.store = "shop";
    d.user = "ann";
    d.topic = std::move(topic);
    d.folder = "/tmp/x/" + d.topic;
    d.scopes = {"orders.read"};
    d.critical = {{"memory", "n1", "Close at six", false}};
    return d;
}

std::filesystem::path temp_db() {
    return std::filesystem::temp_directory_path() /
           ("gatehouse-session-table-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()) + ".sqlite3");
}

} // namespace

TEMPLATE_TEST_CASE("SessionTable on both backends", "[session]", std::true_type, std::false_type) {
    const bool memory = TestType::value;
    const auto db = temp_db();
    auto make = [&] { return memory ? state::make_memory_backend() : state::make_sqlite_backend(db.string()); };
    std::int64_t now = 1'000'000;
    SessionTable table(make(), std::chrono::seconds(60), [&] { return now; });

    const auto s = table.open(draft("alice", "orders"));
    REQUIRE(s.handle.size() == 32);
    REQUIRE(s.nonce.size() == 64);

    SECTION("the owner finds it, with everything remembered") {
        auto found = table.find(s.handle, "alice");
        REQUIRE(found);
        CHECK(found->store == "shop");
        CHECK(found->scopes == std::vector<std::string>{"orders.read"});
        CHECK(found->unread_critical() == 1);
        CHECK(found->nonce == s.nonce);
    }
    SECTION("another principal's handle behaves like an unknown one") {
        CHECK_FALSE(table.find(s.handle, "mallory"));
        CHECK_FALSE(table.find("00000000000000000000000000000000", "alice"));
        CHECK_FALSE(table.find("session/../x", "alice"));
        CHECK(table.find(s.handle, "alice")); // the failed attempts changed nothing
    }
    SECTION("idle expiry, and use restarts it") {
        now += 59'000;
        REQUIRE(table.find(s.handle, "alice"));
        now += 59'000;
        REQUIRE(table.find(s.handle, "alice"));
        now += 60'000;
        CHECK_FALSE(table.find(s.handle, "alice"));
    }
    SECTION("reconnecting the same topic resets it and retires the old handle") {
        table.update(s.handle, "alice", [](session::Session& x) {
            x.accepted_rules.push_back("ruled");
            x.critical[0].read = true;
        });
        const auto again = table.open(draft("alice", "orders"));
        CHECK(again.handle != s.handle);
        CHECK(again.nonce != s.nonce);
        CHECK_FALSE(table.find(s.handle, "alice"));
        auto fresh = table.find(again.handle, "alice");
        REQUIRE(fresh);
        CHECK(fresh->accepted_rules.empty());
        CHECK(fresh->unread_critical() == 1);
    }
    SECTION("an unchanged record is decoded once and shared; a change makes a new one") {
        const auto first = table.find(s.handle, "alice");
        const auto second = table.find(s.handle, "alice");
        REQUIRE(first);
        CHECK(first.get() == second.get()); // no copy per lookup
        table.update(s.handle, "alice", [](session::Session& x) { x.accepted_rules.push_back("ruled"); });
        const auto after = table.find(s.handle, "alice");
        REQUIRE(after);
        CHECK(after.get() != first.get());
        CHECK(after->accepted("ruled"));
        CHECK_FALSE(first->accepted("ruled")); // what an earlier call holds stays as it was
    }
    SECTION("a record another host process wrote is seen on the next lookup") {
        REQUIRE(table.find(s.handle, "alice"));
        auto record = nlohmann::json::parse(*table.backend().get("session/" + s.handle));
        record["accepted_rules"].push_back("elsewhere");
        table.backend().put("session/" + s.handle, record.dump(), std::chrono::seconds(60));
        const auto found = table.find(s.handle, "alice");
        REQUIRE(found);
        CHECK(found->accepted("elsewhere"));
    }
    SECTION("another topic or principal keeps its own session") {
        const auto other = table.open(draft("alice", "returns"));
        const auto bob = table.open(draft("bob", "orders"));
        CHECK(table.find(s.handle, "alice"));
        CHECK(table.find(other.handle, "alice"));
        CHECK(table.find(bob.handle, "bob"));
    }
    if (!memory) {
        SECTION("SQLite: a session survives a new table on the same file (a restart)") {
            SessionTable restarted(make(), std::chrono::seconds(60), [&] { return now; });
            CHECK(restarted.find(s.handle, "alice"));
        }
    }
    std::filesystem::remove(db);
    std::filesystem::remove(db.string() + "-wal");
    std::filesystem::remove(db.string() + "-shm");
}

TEST_CASE("a memory backend forgets everything on restart", "[session]") {
    std::string handle;
    {
        SessionTable table(state::make_memory_backend(), std::chrono::seconds(60));
        handle = table.open(draft("alice", "orders")).handle;
    }
    SessionTable restarted(state::make_memory_backend(), std::chrono::seconds(60));
    CHECK_FALSE(restarted.find(handle, "alice"));
}

TEST_CASE("a topic's index expires with its session, and a lookup renews both", "[session]") {
    const auto db = temp_db();
    {
        SessionTable table(state::make_sqlite_backend(db.string()), std::chrono::seconds(3));
        auto inspector = state::make_sqlite_backend(db.string());
        // session-topic/<hex principal>/<hex topic>: the index the next
        // connect of the topic reads, written for every topic a caller names.
        const std::string index = "session-topic/" + std::string("616c696365") + "/" + "6f7264657273";
        const auto opened = table.open(draft("alice", "orders"));
        REQUIRE(inspector->get(index) == std::optional<std::string>(opened.handle));
        // Margins of a second and more, for a loaded machine.
        std::this_thread::sleep_for(std::chrono::milliseconds(1800));
        REQUIRE(table.find(opened.handle, "alice"));
        std::this_thread::sleep_for(std::chrono::milliseconds(1800));
        CHECK(inspector->get(index) == std::optional<std::string>(opened.handle));
        // Unused past its idle expiry: the session and its index are gone
        // (before, the index was kept for good).
        std::this_thread::sleep_for(std::chrono::milliseconds(3600));
        CHECK_FALSE(table.find(opened.handle, "alice"));
        CHECK_FALSE(inspector->get(index));
    }
    std::filesystem::remove(db);
    std::filesystem::remove(db.string() + "-wal");
    std::filesystem::remove(db.string() + "-shm");
}

namespace {

// The memory backend, with the first two reads of a topic's index held until
// both happened: two opens of one topic then race exactly where they can.
class RacingReads final : public state::StateBackend {
public:
    std::optional<std::string> get(std::string_view key) override {
        const bool topic = key.starts_with("session-topic/");
        auto value = inner_->get(key);
        if (topic && held_.fetch_add(1) < 2) both_read_.arrive_and_wait();
        return value;
    }
    void put(std::string_view k, std::string_view v, std::chrono::milliseconds t) override { inner_->put(k, v, t); }
    bool erase(std::string_view k) override { return inner_->erase(k); }
    bool replace(std::string_view k, std::string_view e, std::string_view v, std::chrono::milliseconds t) override {
        return inner_->replace(k, e, v, t);
    }
    bool add(std::string_view k, std::string_view v, std::chrono::milliseconds t) override {
        return inner_->add(k, v, t);
    }
    std::optional<std::string> take(std::string_view k) override { return inner_->take(k); }
    std::vector<std::pair<std::string, std::string>> scan(std::string_view p) override { return inner_->scan(p); }
    const char* name() const override { return "racing"; }

private:
    std::unique_ptr<state::StateBackend> inner_ = state::make_memory_backend();
    std::atomic<int> held_{0};
    std::latch both_read_{2};
};

} // namespace

TEST_CASE("two opens of one topic at once leave exactly one live handle", "[session]") {
    SessionTable table(std::make_unique<RacingReads>(), std::chrono::seconds(60));
    std::string first, second;
    std::thread a([&] { first = table.open(draft("alice", "orders")).handle; });
    std::thread b([&] { second = table.open(draft("alice", "orders")).handle; });
    a.join();
    b.join();
    REQUIRE(first != second);
    const bool first_live = table.find(first, "alice") != nullptr;
    const bool second_live = table.find(second, "alice") != nullptr;
    CHECK(first_live != second_live);
}

TEST_CASE("a principal keeps at most max_per_principal topics' sessions; more end the oldest", "[session]") {
    std::int64_t now = 1'000'000;
    SessionTable table(
        state::make_memory_backend(), std::chrono::seconds(3600), [&] { return now; }, 3);
    std::vector<std::string> handles;
    for (const char* topic : {"a", "b", "c"}) {
        handles.push_back(table.open(draft("alice", topic)).handle);
        now += 10;
    }
    const auto bob = table.open(draft("bob", "a")); // another principal's count is his own
    for (const auto& h : handles)
        CHECK(table.find(h, "alice"));
    // Reconnecting a listed topic adds nothing.
    handles[1] = table.open(draft("alice", "b")).handle;
    now += 10;
    for (const auto& h : handles)
        CHECK(table.find(h, "alice"));
    // A fourth topic ends the one opened longest ago: "a".
    const auto d = table.open(draft("alice", "d"));
    CHECK_FALSE(table.find(handles[0], "alice"));
    CHECK(table.find(handles[1], "alice"));
    CHECK(table.find(handles[2], "alice"));
    CHECK(table.find(d.handle, "alice"));
    CHECK(table.find(bob.handle, "bob"));
    // However many topics a caller names, its live sessions stay at three.
    std::vector<std::string> flood;
    for (int i = 0; i < 50; ++i) {
        now += 10;
        flood.push_back(table.open(draft("alice", "t" + std::to_string(i))).handle);
    }
    int live = 0;
    for (const auto& h : flood)
        live += table.find(h, "alice") != nullptr;
    for (const auto& h : handles)
        live += table.find(h, "alice") != nullptr;
    live += table.find(d.handle, "alice") != nullptr;
    CHECK(live == 3);
    CHECK(table.backend().scan("session/").size() == 3 + 1); // alice's three and bob's one
}

TEST_CASE("sessions kept in use keep their principal's count alive: the cap holds past the idle expiry", "[session]") {
    SessionTable table(state::make_memory_backend(), std::chrono::seconds(3), {}, 2);
    const auto a = table.open(draft("alice", "a"));
    const auto b = table.open(draft("alice", "b"));
    // Both in use for longer than the idle expiry, with no connect meanwhile
    // (before, the list of alice's topics expired then, though they lived).
    for (int i = 0; i < 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        REQUIRE(table.find(a.handle, "alice"));
        REQUIRE(table.find(b.handle, "alice"));
    }
    // A third topic still ends the one opened longest ago.
    const auto c = table.open(draft("alice", "c"));
    CHECK_FALSE(table.find(a.handle, "alice"));
    CHECK(table.find(b.handle, "alice"));
    CHECK(table.find(c.handle, "alice"));
}
