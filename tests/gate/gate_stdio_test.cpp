// The gate and the session family, driven through the real binary over
// stdio with the session plugin and the "gated" fixture family.
#include "stdio_host.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kPassword = "hunter2-Zq8!s3cret";

struct Scene {
    fs::path dir;
    fs::path config, program, grants, credentials, data;

    explicit Scene(const std::string& name, const std::string& backend = "sqlite", bool pinned = false) {
        dir = fs::temp_directory_path() / ("gatehouse-gate-" + std::to_string(::getpid()) + "-" + name);
        fs::remove_all(dir);
        fs::create_directories(dir);
        config = dir / "gatehouse.yaml";
        program = dir / "program.json";
        grants = dir / "grants.yaml";
        credentials = dir / "credentials";
        data = dir / "data";
        set_program("shop", "ann");
        set_grants("[orders.read]");
        std::ofstream(credentials) << kPassword << "\n";
        ::chmod(credentials.c_str(), 0600);
        std::ofstream(config) << "plugin_dir: " << GATEHOUSE_TEST_PLUGIN_DIR << "\n"
                              << "data_dir: " << data.string() << "\n"
                              << "plugins:\n  - " << GATEHOUSE_SESSION_PLUGIN << "\n  - gated.so\n"
                              << "domains:\n  gated:\n    settings:\n      critical:\n"
                              << "        - {id: n1, title: Close the till at six}\n"
                              << "session:\n  backend: " << backend << "\n"
                              << (pinned ? "  pinned: {store: shop, user: ann}\n"
                                         : "  program_state_file: " + program.string() + "\n")
                              << "  grants_file: " << grants.string() << "\n"
                              << "  credentials_file: " << credentials.string() << "\n"
                              << "  rules: Work only on what the person asked for.\n";
    }
    ~Scene() { fs::remove_all(dir); }

    void set_program(const std::string& store, const std::string& user) {
        std::ofstream(program)
            << json{{"running", true}, {"store", store}, {"user", user}, {"updated", "2026-11-30T10:00:00Z"}}.dump();
    }
    void set_grants(const std::string& ann_scopes) {
        std::ofstream(grants) << "grants:\n  shop:\n    ann: " << ann_scopes << "\n";
    }
    StdioHost start(const std::string& principal = "alice") const {
        return StdioHost(config.string(), {{"GATEHOUSE_PRINCIPAL", principal}});
    }
};

// The code of a refusal: the gate's and the session tools' alike carry
// structuredContent {code, message, next} and the text "CODE: message".
std::string code_of(const json& result) {
    if (!result.value("isError", false)) return "";
    INFO(result.dump());
    if (!result.contains("structuredContent")) return "(no refusal) " + result["content"][0]["text"].get<std::string>();
    const json& refusal = result["structuredContent"];
    CHECK(refusal["next"].is_object());
    CHECK(result["content"][0]["text"] ==
          refusal["code"].get<std::string>() + ": " + refusal["message"].get<std::string>());
    return refusal["code"];
}

json structured(const json& result) {
    INFO(result.dump());
    REQUIRE_FALSE(result.value("isError", false));
    return result["structuredContent"];
}

std::string open_session(StdioHost& host, const std::string& topic) {
    return structured(host.call("session_connect", {{"topic", topic}}))["session"];
}

// Every byte of every file under dir, for the "no password anywhere" checks.
std::string all_file_bytes(const fs::path& dir) {
    std::string all;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        if (entry.is_regular_file()) {
            std::ifstream in(entry.path(), std::ios::binary);
            std::stringstream s;
            s << in.rdbuf();
            all += s.str();
        }
    return all;
}

} // namespace

TEST_CASE("the gate over stdio, check by check", "[gate][stdio]") {
    Scene scene("flow");
    auto host = scene.start();

    // The published schema of a gated tool asks for the session; a session tool's does not.
    auto listing = host.request("tools/list", json::object())["result"]["tools"];
    int seen = 0;
    for (const auto& t : listing) {
        if (t["name"] == "count") {
            CHECK(t["inputSchema"]["required"] == json::array({"session"}));
            CHECK(t["inputSchema"]["properties"]["session"]["type"] == "string");
            ++seen;
        }
        if (t["name"] == "session_connect") {
            CHECK_FALSE(t["inputSchema"]["properties"].contains("session"));
            ++seen;
        }
    }
    CHECK(seen == 2);

    CHECK(code_of(host.call("count", json::object())) == "NOT_CONNECTED");
    CHECK(code_of(host.call("count", {{"session", "0123456789abcdef0123456789abcdef"}})) == "NOT_CONNECTED");

    auto look = structured(host.call("session_init", json::object()));
    CHECK(look["store"] == "shop");
    CHECK(look["program_running"] == true);
    CHECK(look["password_available"] == true);

    auto connected = structured(host.call("session_connect", {{"topic", "orders"}}));
    const std::string handle = connected["session"];
    CHECK(connected["unread_critical_notes"] == 1);
    CHECK(connected["scopes"] == json::array({"orders.read"}));
    CHECK(connected["rules"] == "Work only on what the person asked for.");
    CHECK(fs::is_directory(connected["folder"].get<std::string>()));

    // Not granted: refused before the plugin runs.
    CHECK(code_of(host.call("guarded", {{"session", handle}})) == "NOT_GRANTED");
    CHECK(structured(host.call("calls", json::object()))["guarded"] == 0);

    // Critical notes first.
    auto unread = host.call("count", {{"session", handle}});
    REQUIRE(code_of(unread) == "CRITICAL_NOTES_UNREAD");
    CHECK(unread["structuredContent"]["next"]["unread"][0]["id"] == "n1");
    CHECK(structured(host.call("calls", json::object()))["count"] == 0);
    CHECK(structured(host.call("read_critical", {{"session", handle}}))["unread"] == 0);
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 1);

    // The plugin sees the session record, never the handle.
    auto who = structured(host.call("whoami", {{"session", handle}, {"text", "hi"}}));
    CHECK(who["context"]["session"]["store"] == "shop");
    CHECK(who["context"]["session"]["user"] == "ann");
    CHECK(who["context"]["session"]["topic"] == "orders");
    CHECK(who["context"]["session"]["principal"] == "alice");
    CHECK(who["arguments"] == json{{"text", "hi"}});
    CHECK(who.dump().find(handle) == std::string::npos);

    // Rules: refused with a code, accepted, then through; not asked again.
    auto ruled = host.call("ruled", {{"session", handle}});
    REQUIRE(code_of(ruled) == "RULES_NOT_ACCEPTED");
    const std::string code = ruled["structuredContent"]["next"]["code"];
    CHECK(ruled["structuredContent"]["next"]["rules"].get<std::string>().find("asking the person") !=
          std::string::npos);
    CHECK(structured(host.call("calls", json::object()))["ruled"] == 0);
    CHECK(structured(host.call("session_rules_accept", {{"session", handle}, {"code", code}}))["accepted"] == "ruled");
    CHECK(structured(host.call("ruled", {{"session", handle}}))["count"] == 1);
    CHECK(structured(host.call("ruled", {{"session", handle}}))["count"] == 2);

    // The same code in another session never fits.
    const std::string other = open_session(host, "returns");
    CHECK(host.call("session_rules_accept", {{"session", other}, {"code", code}}).value("isError", false));
    CHECK(code_of(host.call("session_rules_accept", {{"session", other}, {"code", code}})) == "RULES_CODE_INVALID");

    // A grant change takes effect only after reconnecting, which resets everything.
    scene.set_grants("[orders.read, vault.open]");
    CHECK(code_of(host.call("guarded", {{"session", handle}})) == "NOT_GRANTED");
    const std::string again = open_session(host, "orders");
    CHECK(code_of(host.call("count", {{"session", handle}})) == "NOT_CONNECTED"); // the old handle is gone
    CHECK(code_of(host.call("guarded", {{"session", again}})) == "CRITICAL_NOTES_UNREAD");
    structured(host.call("read_critical", {{"session", again}}));
    CHECK(structured(host.call("guarded", {{"session", again}}))["count"] == 1);
    CHECK(code_of(host.call("ruled", {{"session", again}})) == "RULES_NOT_ACCEPTED"); // accepted rules were reset

    // The program switches store: the session no longer fits.
    scene.set_program("other-shop", "ann");
    CHECK(code_of(host.call("count", {{"session", again}})) == "STORE_SWITCHED");
    scene.set_program("shop", "ann");
    CHECK(structured(host.call("count", {{"session", again}}))["count"] == 2);

    // A handle is not a password: another principal cannot use it.
    host.stop();
    StdioHost mallory(scene.config.string(), {{"GATEHOUSE_PRINCIPAL", "mallory"}});
    CHECK(code_of(mallory.call("count", {{"session", again}})) == "NOT_CONNECTED");
    mallory.stop();

    // The password is nowhere a test can look.
    CHECK(host.stdout_text().find(kPassword) == std::string::npos);
    CHECK(host.stderr_text().find(kPassword) == std::string::npos);
    CHECK(all_file_bytes(scene.data).find(kPassword) == std::string::npos);
    CHECK(host.stdout_text().find("hunter2") == std::string::npos);
}

TEST_CASE("a password from the environment stays out of every answer", "[gate][stdio]") {
    Scene scene("env-password", "sqlite", true);
    // Without a credentials_file the host falls back to the environment.
    std::ifstream in(scene.config);
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    yaml.erase(yaml.find("  credentials_file"),
               yaml.find('\n', yaml.find("  credentials_file")) - yaml.find("  credentials_file") + 1);
    std::ofstream(scene.config) << yaml;
    StdioHost host(scene.config.string(), {{"GATEHOUSE_PRINCIPAL", "alice"}, {"GATEHOUSE_STORE_PASSWORD", kPassword}});
    CHECK(structured(host.call("session_init", json::object()))["password_available"] == true);
    const auto handle = open_session(host, "orders");
    host.call("read_critical", {{"session", handle}});
    host.call("whoami", {{"session", handle}});
    host.call("session_clear", {{"session", handle}});
    host.stop();
    CHECK(host.stdout_text().find(kPassword) == std::string::npos);
    CHECK(host.stderr_text().find(kPassword) == std::string::npos);
    CHECK(all_file_bytes(scene.data).find(kPassword) == std::string::npos);
}

TEST_CASE("a credentials file open to others is refused", "[gate][stdio]") {
    Scene scene("open-credentials");
    ::chmod(scene.credentials.c_str(), 0644);
    auto host = scene.start();
    auto r = host.call("session_connect", {{"topic", "orders"}});
    CHECK(code_of(r) == "CREDENTIALS_REFUSED");
    host.stop();
    CHECK(host.stdout_text().find(kPassword) == std::string::npos);
    CHECK(host.stderr_text().find(kPassword) == std::string::npos);
}

TEST_CASE("a family that cannot list its critical notes keeps sessions from opening", "[gate][stdio]") {
    Scene scene("critical-fails");
    std::ifstream in(scene.config);
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    yaml.replace(yaml.find("    settings:\n"), 14, "    settings:\n      critical_fails: true\n");
    std::ofstream(scene.config) << yaml;
    auto host = scene.start();
    CHECK(code_of(host.call("session_connect", {{"topic", "orders"}})) == "CRITICAL_NOTES_UNAVAILABLE");
    host.stop();
    CHECK(host.stderr_text().find("the notes database is locked") != std::string::npos);
}

TEST_CASE("a family listing a critical note whose title is not text keeps sessions from opening, saying so",
          "[gate][stdio]") {
    Scene scene("critical-title");
    std::ifstream in(scene.config);
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const std::string good = "{id: n1, title: Close the till at six}";
    yaml.replace(yaml.find(good), good.size(), "{id: n1, title: 5}");
    std::ofstream(scene.config) << yaml;
    auto host = scene.start();
    CHECK(code_of(host.call("session_connect", {{"topic", "orders"}})) == "CRITICAL_NOTES_UNAVAILABLE");
    host.stop();
    CHECK(host.stderr_text().find("could not list its critical notes") != std::string::npos);
}

TEST_CASE("restart on the sqlite backend keeps the session", "[gate][stdio]") {
    Scene scene("restart-sqlite", "sqlite");
    std::string handle;
    {
        auto host = scene.start();
        handle = open_session(host, "orders");
        structured(host.call("read_critical", {{"session", handle}}));
    }
    auto host = scene.start();
    CHECK(structured(host.call("count", {{"session", handle}}))["count"] == 1);
}

TEST_CASE("restart on the memory backend forgets, the same topic finds the same folder", "[gate][stdio]") {
    Scene scene("restart-memory", "memory");
    std::string handle, folder;
    {
        auto host = scene.start();
        auto c = structured(host.call("session_connect", {{"topic", "orders"}}));
        handle = c["session"];
        folder = c["folder"];
        std::ofstream(fs::path(folder) / "notes.md") << "kept across restarts\n";
    }
    auto host = scene.start();
    CHECK(code_of(host.call("count", {{"session", handle}})) == "NOT_CONNECTED");
    auto c = structured(host.call("session_connect", {{"topic", "orders"}}));
    CHECK(c["folder"] == folder);
    CHECK(fs::exists(fs::path(folder) / "notes.md"));
}

TEST_CASE("session_clear lists and deletes only what was named", "[gate][stdio]") {
    Scene scene("clear", "memory", true);
    auto host = scene.start();
    open_session(host, "alpha");
    auto c = structured(host.call("session_connect", {{"topic", "beta"}}));
    const fs::path beta = c["folder"].get<std::string>();
    std::ofstream(beta / "draft.txt") << "12345";
    const std::string handle = open_session(host, "gamma");
    const fs::path root = beta.parent_path();
    const fs::path outside = scene.dir / "outside";
    fs::create_directories(outside);
    std::ofstream(outside / "precious.txt") << "do not touch";
    fs::create_directory_symlink(outside, root / "evil");

    auto listed = structured(host.call("session_clear", {{"session", handle}}));
    std::vector<std::string> names;
    for (const auto& f : listed["folders"])
        names.push_back(f["name"]);
    CHECK(names == std::vector<std::string>{"alpha", "beta", "gamma"});
    for (const auto& f : listed["folders"])
        if (f["name"] == "beta") CHECK(f["size"] == 5);

    auto cleared = structured(
        host.call("session_clear", {{"session", handle}, {"delete", {"beta", "evil", "../outside", "nope", ".."}}}));
    CHECK(cleared["deleted"] == json::array({"beta"}));
    CHECK(cleared["refused"].size() == 4);
    CHECK_FALSE(fs::exists(beta));
    CHECK(fs::exists(root / "alpha"));
    CHECK(fs::exists(root / "gamma")); // the open session's own folder, not named
    CHECK(fs::exists(outside / "precious.txt"));
    CHECK(fs::is_symlink(root / "evil"));
    CHECK(code_of(host.call("session_clear", {{"session", "ffffffffffffffffffffffffffffffff"}})) == "NOT_CONNECTED");
}

TEST_CASE("session_clear of a session whose store or user the program has left refuses, deleting nothing",
          "[gate][stdio]") {
    Scene scene("clear-switched");
    auto host = scene.start();
    const fs::path alpha = structured(host.call("session_connect", {{"topic", "alpha"}}))["folder"].get<std::string>();
    const std::string handle = open_session(host, "beta");
    const fs::path beta = alpha.parent_path() / "beta";

    const auto refused = [&](const std::string& why) {
        INFO(why);
        const auto result = host.call("session_clear", {{"session", handle}, {"delete", {"alpha", "beta"}}});
        CHECK(code_of(result) == "STORE_SWITCHED");
        CHECK(result["structuredContent"]["next"]["tool"] == "session_connect");
        CHECK(result["structuredContent"]["next"]["topic"] == "beta");
        CHECK(fs::exists(alpha));
        CHECK(fs::exists(beta));
    };
    scene.set_program("other", "bob");
    refused("another store and user");
    scene.set_program("shop", "bob");
    refused("the same store, another user");
    std::ofstream(scene.program) << R"({"running": false})";
    refused("the program is not running");
    std::ofstream(scene.program) << R"({"running": true, "store": null, "user": null})";
    refused("no store open");

    scene.set_program("shop", "ann");
    auto cleared = structured(host.call("session_clear", {{"session", handle}, {"delete", {"alpha"}}}));
    CHECK(cleared["deleted"] == json::array({"alpha"}));
    CHECK_FALSE(fs::exists(alpha));
    CHECK(fs::exists(beta));
}

TEST_CASE("hostile topics are refused or contained", "[gate][stdio]") {
    Scene scene("topics", "memory", true);
    auto host = scene.start();
    for (const std::string& topic : {std::string("../x"), std::string("a/b"), std::string(""), std::string(65, 'a'),
                                     std::string("a\x01"
                                                 "b"),
                                     std::string("a\nb"), std::string(".."), std::string("a b")}) {
        INFO("topic: " << json(topic).dump());
        const json refused = host.call("session_connect", {{"topic", topic}});
        CHECK(code_of(refused) == "TOPIC_INVALID");
        CHECK(refused["structuredContent"]["next"]["argument"] == "topic");
    }
    // U+0000 never reaches the family: the host refuses it in any argument.
    const json nul = host.call("session_connect", {{"topic", std::string("a\0b", 3)}});
    CHECK(code_of(nul) == "NUL_IN_STRING");
    CHECK(nul["structuredContent"]["next"]["pointer"] == "/topic");
    // A symlink planted under a topic's name is never followed.
    const std::string handle = open_session(host, "fine");
    auto described = structured(host.call("session_clear", {{"session", handle}}));
    CHECK(described["open_topic"] == "fine");
    const fs::path root =
        fs::path(structured(host.call("session_connect", {{"topic", "fine"}}))["folder"].get<std::string>())
            .parent_path();
    REQUIRE(fs::is_directory(root / "fine"));
    fs::create_directories(scene.dir / "elsewhere");
    fs::create_directory_symlink(scene.dir / "elsewhere", root / "planted");
    CHECK(code_of(host.call("session_connect", {{"topic", "planted"}})) == "CONVERSATION_FOLDER_UNSAFE");
    CHECK(structured(host.call("session_connect", {{"topic", "заказы"}}))["folder"].get<std::string>().find("заказы") !=
          std::string::npos);
}

TEST_CASE("a user's topics are bounded: a new one past session.max_topics is refused, the ones kept still open",
          "[gate][stdio]") {
    Scene scene("max-topics");
    std::ofstream(scene.config, std::ios::app) << "  max_topics: 2\n";
    auto host = scene.start();
    CHECK(code_of(host.call("session_connect", {{"topic", "one"}})) == "");
    CHECK(code_of(host.call("session_connect", {{"topic", "two"}})) == "");
    const json third = host.call("session_connect", {{"topic", "three"}});
    CHECK(code_of(third) == "TOO_MANY_TOPICS");
    CHECK(third["structuredContent"]["message"].get<std::string>().find("session.max_topics: 2") != std::string::npos);
    CHECK(code_of(host.call("session_connect", {{"topic", "one"}})) == "");
    // Another principal keeps topics of its own.
    auto other = scene.start("bob");
    CHECK(code_of(other.call("session_connect", {{"topic", "three"}})) == "");
}

TEST_CASE("conversation folders are the principal's own: never listed, deleted or opened by another", "[gate][stdio]") {
    Scene scene("clear-principals", "memory", true);
    auto alice = scene.start("alice");
    auto mine = structured(alice.call("session_connect", {{"topic", "orders"}}));
    const fs::path alices = mine["folder"].get<std::string>();
    std::ofstream(alices / "draft.txt") << "alice's";
    open_session(alice, "private");

    auto bob = scene.start("bob");
    auto his = structured(bob.call("session_connect", {{"topic", "orders"}}));
    CHECK(his["folder"] != mine["folder"]); // the same topic opens another folder
    CHECK(fs::is_empty(his["folder"].get<std::string>()));
    const std::string handle = his["session"];
    auto listed = structured(bob.call("session_clear", {{"session", handle}}));
    CHECK(listed["folders"].size() == 1);
    CHECK(listed["folders"][0]["name"] == "orders");
    CHECK(listed["folders"][0]["size"] == 0); // his own, empty; not alice's 7 bytes
    auto cleared = structured(bob.call("session_clear", {{"session", handle}, {"delete", {"private", "orders"}}}));
    CHECK(cleared["deleted"] == json::array({"orders"}));
    REQUIRE(cleared["refused"].size() == 1);
    CHECK(cleared["refused"][0]["reason"] == "no such conversation folder");
    CHECK(fs::exists(alices / "draft.txt"));
    CHECK(fs::is_directory(alices.parent_path() / "private"));
    // Alice's handle is not bob's either.
    const std::string alices_handle = open_session(alice, "orders");
    CHECK(code_of(bob.call("session_clear", {{"session", alices_handle}})).rfind("NOT_CONNECTED", 0) == 0);
}

TEST_CASE("session_clear follows a link at no level above the topic folders", "[gate][stdio]") {
    Scene scene("clear-links", "memory", true);
    auto host = scene.start();
    auto c = structured(host.call("session_connect", {{"topic", "orders"}}));
    const std::string handle = c["session"];
    const fs::path root = fs::path(c["folder"].get<std::string>()).parent_path();
    const fs::path conversations = scene.data / "conversations";
    // root = conversations/<principal>/<store>/<user>: each level in turn is
    // moved away and a link to it put in its place.
    const std::vector<fs::path> levels = {root.parent_path().parent_path(), root.parent_path(), root};
    REQUIRE(levels[0].parent_path() == conversations);
    for (const auto& level : levels) {
        INFO("link at " << level.lexically_relative(conversations));
        const fs::path moved = scene.dir / "moved";
        fs::rename(level, moved);
        const fs::path moved_root = moved / root.lexically_relative(level); // the root, now behind the link
        // The link's target holds a folder that looks like a topic, with a file.
        const fs::path victim = moved_root / "victim";
        fs::create_directories(victim);
        std::ofstream(victim / "precious.txt") << "do not touch";
        fs::create_directory_symlink(moved, level);

        const auto listed = host.call("session_clear", {{"session", handle}});
        CHECK(code_of(listed).rfind("CONVERSATION_FOLDER_UNSAFE", 0) == 0);
        CHECK(listed.dump().find("victim") == std::string::npos); // nothing below the link was listed
        const auto deleted = host.call("session_clear", {{"session", handle}, {"delete", {"victim", "orders"}}});
        CHECK(code_of(deleted).rfind("CONVERSATION_FOLDER_UNSAFE", 0) == 0);
        CHECK(fs::exists(victim / "precious.txt"));
        CHECK(fs::is_directory(moved_root / "orders"));
        // Creating through the link is refused as well.
        CHECK(code_of(host.call("session_connect", {{"topic", "fresh"}})).rfind("CONVERSATION_FOLDER_UNSAFE", 0) == 0);
        CHECK_FALSE(fs::exists(moved_root / "fresh"));

        fs::remove(level);
        fs::remove_all(victim);
        fs::rename(moved, level);
    }
    // Every level whole again: the listing works.
    auto listed = structured(host.call("session_clear", {{"session", handle}}));
    CHECK(listed["folders"].size() == 1);
}

TEST_CASE("a folder nested deeper than the walk goes is reported, and left whole", "[gate][stdio]") {
    Scene scene("clear-deep", "memory", true);
    auto host = scene.start();
    auto c = structured(host.call("session_connect", {{"topic", "deep"}}));
    const fs::path deep = c["folder"].get<std::string>();
    const std::string handle = open_session(host, "shallow");
    fs::path at = deep;
    for (int i = 0; i < 70; ++i)
        at /= "d";
    fs::create_directories(at);
    std::ofstream(at / "bottom.txt") << "far down";
    std::ofstream(deep / "top.txt") << "abc";

    auto listed = structured(host.call("session_clear", {{"session", handle}}));
    bool seen = false;
    for (const auto& f : listed["folders"])
        if (f["name"] == "deep") {
            seen = true;
            CHECK(f["size"] == 3);
            REQUIRE(f.contains("incomplete"));
            CHECK(f["incomplete"].get<std::string>().find("64 levels") != std::string::npos);
        } else {
            CHECK_FALSE(f.contains("incomplete"));
        }
    CHECK(seen);

    auto result = host.call("session_clear", {{"session", handle}, {"delete", {"deep"}}});
    auto cleared = structured(result);
    CHECK(cleared["deleted"] == json::array());
    REQUIRE(cleared["refused"].size() == 1);
    CHECK(cleared["refused"][0]["reason"].get<std::string>().find("nothing in it deleted") != std::string::npos);
    CHECK(result["content"][0]["text"].get<std::string>().find("64 levels") != std::string::npos);
    CHECK(fs::exists(at / "bottom.txt"));
    CHECK(fs::exists(deep / "top.txt"));
}
