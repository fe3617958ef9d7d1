#include "session/conversation_folder.hpp"
#include "session/grant_table.hpp"
#include "session/store_password.hpp"
#include "session/store_source.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace gatehouse;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const std::string& name) {
    auto p = fs::temp_directory_path() / ("gatehouse-sources-" + std::to_string(::getpid())) / name;
    fs::create_directories(p.parent_path());
    return p;
}
} // namespace

TEST_CASE("StoreSource reads the program state file", "[session]") {
    config::SessionSettings settings;
    settings.program_state_file = scratch("program.json");
    fs::remove(settings.program_state_file);
    session::StoreSource stores(settings);
    CHECK_FALSE(stores.current().program_running); // never ran: no file
    std::ofstream(settings.program_state_file)
        << R"({"running": true, "store": "shop", "user": "ann", "updated": "x"})";
    auto v = stores.current();
    CHECK(v.program_running);
    CHECK(v.store == "shop");
    CHECK(v.user == "ann");
    std::ofstream(settings.program_state_file) << R"({"store": "shop"})";
    CHECK_THROWS_AS(stores.current(), session::StoreSourceError);
}

TEST_CASE("GrantTable merges YAML and the grants file, read afresh", "[session]") {
    config::SessionSettings settings;
    settings.grants = {{"shop", {{"ann", {"orders.read"}}}}};
    settings.grants_file = scratch("grants.yaml");
    std::ofstream(settings.grants_file) << "grants:\n  shop:\n    ann: [orders.write]\n";
    session::GrantTable grants(settings);
    CHECK(grants.scopes("shop", "ann") == std::vector<std::string>{"orders.read", "orders.write"});
    CHECK(grants.scopes("shop", "bob").empty());
    std::ofstream(settings.grants_file) << "grants:\n  shop:\n    ann: [orders.write, orders.refund]\n";
    CHECK(grants.scopes("shop", "ann").size() == 3);
    std::ofstream(settings.grants_file) << "grants: [broken";
    CHECK_THROWS_AS(grants.scopes("shop", "ann"), session::GrantsUnavailable);
}

TEST_CASE("StorePassword refuses a credentials file open to others", "[session]") {
    config::SessionSettings settings;
    settings.credentials_file = scratch("credentials");
    std::ofstream(settings.credentials_file) << "hunter2-secret\n";
    ::chmod(settings.credentials_file.c_str(), 0644);
    try {
        session::StorePassword::load(settings);
        FAIL("a group-readable credentials file was used");
    } catch (const session::CredentialsRefused& e) {
        CHECK(std::string(e.what()).find("hunter2") == std::string::npos);
    }
    ::chmod(settings.credentials_file.c_str(), 0600);
    auto password = session::StorePassword::load(settings);
    REQUIRE(password);
    CHECK(password->reveal() == "hunter2-secret");
}

TEST_CASE("conversation folders stay inside their root", "[session]") {
    const auto dir = scratch("conversations");
    fs::remove_all(dir);
    const auto root = session::conversations_root(dir, "../shop", "a/nn");
    CHECK(root.parent_path().parent_path() == dir);
    CHECK(root.filename().string().find('/') == std::string::npos);
    const auto folder = session::open_conversation_folder(root, "orders");
    CHECK(fs::is_directory(folder));
    CHECK(session::open_conversation_folder(root, "orders") == folder); // again: the same folder
    fs::create_directories(dir / "outside");
    fs::create_directory_symlink(dir / "outside", root / "planted");
    CHECK_THROWS_AS(session::open_conversation_folder(root, "planted"), session::ConversationFolderUnsafe);
}
