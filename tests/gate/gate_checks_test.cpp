#include "gate/critical_notes_check.hpp"
#include "gate/grant_check.hpp"
#include "gate/rules_check.hpp"
#include "gate/session_check.hpp"
#include "gate/store_binding_check.hpp"
#include "session/rule_code.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace gatehouse;
using gate::GateContext;
using gate::GateFindings;
using nlohmann::json;

namespace {

struct Fixture {
    auth::Principal alice{"alice", "local"};
    plugins::Tool tool;
    session::SessionTable table{state::make_memory_backend(), std::chrono::seconds(60)};
    session::Session s;

    Fixture() {
        tool.name = "orders_list";
        tool.family = "orders";
        session::SessionDraft d;
        d.principal = "alice";
        d.store = "shop";
        d.user = "ann";
        d.topic = "orders";
        d.folder = "/tmp/orders";
        d.scopes = {"orders.read"};
        s = table.open(d);
    }
};

// A backend that is down: every call throws.
class BrokenBackend final : public state::StateBackend {
public:
    std::optional<std::string> get(std::string_view) override { throw state::BackendError("disk gone"); }
    void put(std::string_view, std::string_view, std::chrono::milliseconds) override {
        throw state::BackendError("disk gone");
    }
    bool add(std::string_view, std::string_view, std::chrono::milliseconds) override {
        throw state::BackendError("disk gone");
    }
    bool replace(std::string_view, std::string_view, std::string_view, std::chrono::milliseconds) override {
        throw state::BackendError("disk gone");
    }
    bool erase(std::string_view) override { throw state::BackendError("disk gone"); }
    std::optional<std::string> take(std::string_view) override { throw state::BackendError("disk gone"); }
    std::vector<std::pair<std::string, std::string>> scan(std::string_view) override {
        throw state::BackendError("disk gone");
    }
    const char* name() const override { return "broken"; }
};

} // namespace

TEST_CASE("SessionCheck", "[gate]") {
    Fixture f;
    gate::SessionCheck check(f.table);
    GateFindings findings;
    SECTION("a live session of this principal passes and is recorded") {
        json args = {{"session", f.s.handle}};
        CHECK_FALSE(check.check({f.tool, f.alice, args, &findings}));
        REQUIRE(findings.session);
        CHECK(findings.session->store == "shop");
    }
    SECTION("no handle, a wrong type, an unknown or a foreign handle: NOT_CONNECTED") {
        auth::Principal mallory{"mallory", "local"};
        for (const json& args : {json::object(), json{{"session", 5}}, json{{"session", "abc"}}}) {
            auto r = check.check({f.tool, f.alice, args, &findings});
            REQUIRE(r);
            CHECK(r->code == "NOT_CONNECTED");
        }
        json args = {{"session", f.s.handle}};
        auto foreign = check.check({f.tool, mallory, args, &findings});
        REQUIRE(foreign);
        CHECK(foreign->code == "NOT_CONNECTED");
        CHECK_FALSE(findings.session);
    }
    SECTION("a backend that is down refuses with its own code") {
        session::SessionTable broken(std::make_unique<BrokenBackend>(), std::chrono::seconds(60));
        gate::SessionCheck failing(broken);
        json args = {{"session", f.s.handle}};
        auto r = failing.check({f.tool, f.alice, args, &findings});
        REQUIRE(r);
        CHECK(r->code == "STATE_UNAVAILABLE");
    }
}

TEST_CASE("StoreBindingCheck", "[gate]") {
    Fixture f;
    GateFindings findings;
    findings.session = std::make_shared<const session::Session>(f.s);
    json args = json::object();
    const auto file = std::filesystem::temp_directory_path() / ("gatehouse-program-" + std::to_string(::getpid()));
    config::SessionSettings settings;
    settings.program_state_file = file;
    session::StoreSource stores(settings);
    gate::StoreBindingCheck check(stores);
    auto write = [&](const std::string& text) { std::ofstream(file) << text; };

    write(R"({"running": true, "store": "shop", "user": "ann", "updated": "2026-11-30T10:00:00Z"})");
    CHECK_FALSE(check.check({f.tool, f.alice, args, &findings}));
    write(R"({"running": true, "store": "other", "user": "ann"})");
    auto switched = check.check({f.tool, f.alice, args, &findings});
    REQUIRE(switched);
    CHECK(switched->code == "STORE_SWITCHED");
    write(R"({"running": false})");
    CHECK(check.check({f.tool, f.alice, args, &findings})->code == "STORE_SWITCHED");
    write("not json");
    CHECK(check.check({f.tool, f.alice, args, &findings})->code == "PROGRAM_STATE_UNREADABLE");

    SECTION("a pinned host never asks the program") {
        config::SessionSettings pinned;
        pinned.pinned_store = "elsewhere";
        pinned.pinned_user = "bob";
        session::StoreSource pinned_stores(pinned);
        gate::StoreBindingCheck pinned_check(pinned_stores);
        CHECK_FALSE(pinned_check.check({f.tool, f.alice, args, &findings}));
    }
    std::filesystem::remove(file);
}

TEST_CASE("GrantCheck", "[gate]") {
    Fixture f;
    GateFindings findings;
    findings.session = std::make_shared<const session::Session>(f.s);
    json args = json::object();
    gate::GrantCheck check;
    f.tool.required_scopes = {"orders.read"};
    CHECK_FALSE(check.check({f.tool, f.alice, args, &findings}));
    f.tool.required_scopes = {"orders.read", "orders.refund"};
    auto r = check.check({f.tool, f.alice, args, &findings});
    REQUIRE(r);
    CHECK(r->code == "NOT_GRANTED");
    CHECK(r->next["missing_scopes"] == json::array({"orders.refund"}));
}

TEST_CASE("CriticalNotesCheck", "[gate]") {
    Fixture f;
    GateFindings findings;
    f.s.critical = {{"memory", "n1", "Close at six", false}, {"memory", "n2", "No refunds", true}};
    findings.session = std::make_shared<const session::Session>(f.s);
    json args = json::object();
    gate::CriticalNotesCheck check;
    auto r = check.check({f.tool, f.alice, args, &findings});
    REQUIRE(r);
    CHECK(r->code == "CRITICAL_NOTES_UNREAD");
    REQUIRE(r->next["unread"].size() == 1);
    CHECK(r->next["unread"][0]["id"] == "n1");
    f.tool.reads_critical = true;
    CHECK_FALSE(check.check({f.tool, f.alice, args, &findings}));
    f.tool.reads_critical = false;
    f.s.critical[0].read = true;
    findings.session = std::make_shared<const session::Session>(f.s);
    CHECK_FALSE(check.check({f.tool, f.alice, args, &findings}));
}

TEST_CASE("RulesCheck", "[gate]") {
    Fixture f;
    GateFindings findings;
    findings.session = std::make_shared<const session::Session>(f.s);
    json args = json::object();
    gate::RulesCheck check;
    CHECK_FALSE(check.check({f.tool, f.alice, args, &findings})); // no rules, nothing to accept
    f.tool.rules = "Ask before refunding.";
    auto r = check.check({f.tool, f.alice, args, &findings});
    REQUIRE(r);
    CHECK(r->code == "RULES_NOT_ACCEPTED");
    CHECK(r->next["rules"] == "Ask before refunding.");
    const std::string code = r->next["code"];
    const std::string key = session::accepted_rules_key(f.tool.name, f.tool.rules);
    CHECK(code == session::rule_code(f.s.nonce, key));
    CHECK(code != session::rule_code(f.s.nonce, session::accepted_rules_key("another_tool", f.tool.rules)));
    CHECK(code != session::rule_code("another nonce", key));
    // The tool's name alone, as sessions recorded before, accepts nothing.
    f.s.accepted_rules.push_back(f.tool.name);
    findings.session = std::make_shared<const session::Session>(f.s);
    CHECK(check.check({f.tool, f.alice, args, &findings}));
    f.s.accepted_rules.push_back(key);
    findings.session = std::make_shared<const session::Session>(f.s);
    CHECK_FALSE(check.check({f.tool, f.alice, args, &findings}));
    // Rules the operator changed since (a configuration re-read) are asked
    // to be accepted again, with a code the old rules' never matches.
    f.tool.rules = "Ask before refunding, and never refund cash.";
    auto changed = check.check({f.tool, f.alice, args, &findings});
    REQUIRE(changed);
    CHECK(changed->code == "RULES_NOT_ACCEPTED");
    CHECK(changed->next["code"] != code);
}
