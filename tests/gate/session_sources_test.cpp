#include "session/conversation_folder.hpp"
#include "session/grant_table.hpp"
#include "session/password_screen.hpp"
#include "session/store_credentials.hpp"
#include "session/store_source.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
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
    // A scope that is not a name is the file's fault, said as such (not a
    // YAML conversion error escaping as an internal one).
    for (const char* nested :
         {"grants:\n  shop:\n    ann: [[orders.read]]\n", "grants:\n  shop:\n    ann: [{x: y}]\n"}) {
        std::ofstream(settings.grants_file) << nested;
        CHECK_THROWS_AS(grants.scopes("shop", "ann"), session::GrantsUnavailable);
    }
}

TEST_CASE("StoreCredentials refuses a credentials file open to others, naming the file only", "[session]") {
    config::SessionSettings settings;
    settings.credentials_file = scratch("credentials");
    std::ofstream(settings.credentials_file) << "hunter2-secret\n";
    ::chmod(settings.credentials_file.c_str(), 0644);
    const session::StoreCredentials credentials(settings, false);
    try {
        (void)credentials.login_for("shop", "ann");
        FAIL("a group-readable credentials file was used");
    } catch (const session::CredentialsRefused& e) {
        const std::string what = e.what();
        CHECK(what.find("hunter2") == std::string::npos);
        CHECK(what.find(settings.credentials_file.string()) != std::string::npos);
    }
    CHECK(credentials.every_password().empty()); // a refused file holds nothing for the answer check either
    ::chmod(settings.credentials_file.c_str(), 0600);
    auto login = credentials.login_for("shop", "ann");
    REQUIRE(login);
    CHECK(login->password == "hunter2-secret");
    CHECK(login->store == "shop");
    CHECK(login->user == "ann");
    fs::remove(settings.credentials_file);
    CHECK_THROWS_AS(credentials.login_for("shop", "ann"), session::CredentialsRefused); // named but missing
}

TEST_CASE("StoreCredentials asks the program's saved logins, then the credentials file, then the environment",
          "[session]") {
    config::SessionSettings settings;
    settings.program_settings_file = scratch("program-settings.json");
    settings.credentials_file = scratch("credentials-order");
    fs::remove(settings.program_settings_file);
    std::ofstream(settings.credentials_file) << "from-the-file\r\nsecond line\n";
    ::chmod(settings.credentials_file.c_str(), 0600);
    ::setenv("GATEHOUSE_STORE_PASSWORD", "from-the-environment", 1);
    struct Unset {
        ~Unset() { ::unsetenv("GATEHOUSE_STORE_PASSWORD"); }
    } unset;

    const session::StoreCredentials credentials(settings, true);
    // No settings file yet: the program has saved nothing, the file answers.
    CHECK(credentials.login_for("shop", "ann")->password == "from-the-file");

    std::ofstream(settings.program_settings_file)
        << R"({"theme": "dark", "saved_logins": [{"store": "shop", "user": "ann", "password": "saved-by-program"},
                                                  {"store": "other", "user": "bob", "password": "bobs-password"}]})";
    ::chmod(settings.program_settings_file.c_str(), 0600);
    CHECK(credentials.login_for("shop", "ann")->password == "saved-by-program");
    CHECK(credentials.login_for("other", "bob")->password == "bobs-password");
    // Saved for another user of the store: the next source answers.
    CHECK(credentials.login_for("shop", "bob")->password == "from-the-file");

    auto every = credentials.every_password();
    std::sort(every.begin(), every.end());
    CHECK(every ==
          std::vector<std::string>{"bobs-password", "from-the-environment", "from-the-file", "saved-by-program"});

    // Only the environment left; it counts only when the host may use it.
    config::SessionSettings env_only;
    CHECK(session::StoreCredentials(env_only, true).login_for("shop", "ann")->password == "from-the-environment");
    CHECK_FALSE(session::StoreCredentials(env_only, false).login_for("shop", "ann"));
    CHECK(session::StoreCredentials(env_only, false).every_password().empty());
}

TEST_CASE("StoreCredentials refuses a program settings file that is open to others or not its format", "[session]") {
    config::SessionSettings settings;
    settings.program_settings_file = scratch("program-settings-refused.json");
    const session::StoreCredentials credentials(settings, false);
    const auto refusal = [&] {
        try {
            (void)credentials.login_for("shop", "ann");
        } catch (const session::CredentialsRefused& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    std::ofstream(settings.program_settings_file)
        << R"({"saved_logins": [{"store": "shop", "user": "ann", "password": "saved-secret"}]})";
    ::chmod(settings.program_settings_file.c_str(), 0640);
    auto why = refusal();
    CHECK(why.find("open to group or others") != std::string::npos);
    CHECK(why.find(settings.program_settings_file.string()) != std::string::npos);
    CHECK(why.find("saved-secret") == std::string::npos);

    ::chmod(settings.program_settings_file.c_str(), 0600);
    REQUIRE(credentials.login_for("shop", "ann"));

    std::ofstream(settings.program_settings_file)
        << R"({"saved_logins": [{"store": "shop", "password": "saved-secret"}]})";
    why = refusal();
    CHECK(why.find("store, user and password") != std::string::npos);
    CHECK(why.find("saved-secret") == std::string::npos);

    std::ofstream(settings.program_settings_file) << R"({"saved_logins": [{"password": "saved-secret" )";
    why = refusal();
    CHECK(why.find("not a JSON object") != std::string::npos);
    CHECK(why.find("saved-secret") == std::string::npos);
}

TEST_CASE("PasswordScreen finds passwords in text and in decoded JSON, and masks them", "[session]") {
    session::PasswordScreen screen({"s3cret", "", "s3cret-longer"});
    CHECK_FALSE(screen.empty());
    CHECK(screen.found_in(std::string_view("the s3cret is out")));
    CHECK_FALSE(screen.found_in(std::string_view("nothing here")));
    // JSON escapes hide it from a text search, not from the decoded values.
    const std::string raw = R"({"a": [1, {"b": "\u0073\u0033cret"}]})";
    CHECK_FALSE(screen.found_in(std::string_view(raw)));
    const auto escaped = nlohmann::json::parse(raw);
    CHECK(screen.found_in(escaped));
    CHECK(screen.found_in(nlohmann::json{{"s3cret", 1}})); // in a key
    CHECK_FALSE(screen.found_in(nlohmann::json{{"a", {1, 2, "x"}}}));
    CHECK(screen.masked("a s3cret-longer and a s3cret") == "a *** and a ***");
    CHECK(session::PasswordScreen().masked("s3cret") == "s3cret");
}

TEST_CASE("conversation folders stay inside their root", "[session]") {
    const auto dir = scratch("conversations");
    fs::remove_all(dir);
    const auto place = session::conversations_place(dir, "alice", "../shop", "a/nn");
    REQUIRE(place.levels.size() == 3);
    CHECK(place.root().parent_path().parent_path().parent_path() == dir);
    for (const auto& level : place.levels) {
        CHECK(level.find('/') == std::string::npos);
        CHECK(level != "..");
    }
    const auto folder = session::open_conversation_folder(place, "orders", 1000);
    CHECK(fs::is_directory(folder));
    CHECK(folder == place.root() / "orders");
    CHECK(session::open_conversation_folder(place, "orders", 1000) == folder); // again: the same folder
    fs::create_directories(dir / "outside");
    fs::create_directory_symlink(dir / "outside", place.root() / "planted");
    CHECK_THROWS_AS(session::open_conversation_folder(place, "planted", 1000), session::ConversationFolderUnsafe);
}

TEST_CASE("conversation folders are the principal's own, and names too long for a file are hashed", "[session]") {
    const auto dir = scratch("conversations-owners");
    const auto local = session::conversations_place(dir, "alice", "shop", "ann");
    const auto token = session::conversations_place(dir, "token:https%3A//as.example:alice", "shop", "ann");
    CHECK(local.levels[0] != token.levels[0]);
    CHECK(local.levels[1] == token.levels[1]);
    // The layout before principals had their own folders began with the store's
    // folder, whose encoded name never holds '.'.
    CHECK(local.levels[0].find('.') != std::string::npos);
    const auto long_one = session::conversations_place(dir, std::string(300, 'x'), std::string(300, 's'), "ann");
    for (const auto& level : long_one.levels)
        CHECK(level.size() < 255);
    CHECK(long_one.levels[1] != session::conversations_place(dir, "a", std::string(301, 's'), "ann").levels[1]);
}

TEST_CASE("a link at any level above the topic folder is refused, never followed", "[session]") {
    const auto dir = scratch("conversations-links");
    const auto place = session::conversations_place(dir, "alice", "shop", "ann");
    for (std::size_t level = 0; level < place.levels.size(); ++level) {
        INFO("level " << level);
        fs::remove_all(dir);
        fs::path at = dir;
        for (std::size_t i = 0; i < level; ++i)
            at /= place.levels[i];
        fs::create_directories(at);
        const auto outside = scratch("conversations-links-outside");
        fs::remove_all(outside);
        fs::create_directories(outside);
        fs::create_directory_symlink(outside, at / place.levels[level]);
        CHECK_THROWS_AS(session::open_conversation_folder(place, "orders", 1000), session::ConversationFolderUnsafe);
        CHECK(fs::is_empty(outside)); // nothing was made through the link
        fs::remove(at / place.levels[level]);
        std::ofstream(at / place.levels[level]) << "a file";
        CHECK_THROWS_AS(session::open_conversation_folder(place, "orders", 1000), session::ConversationFolderUnsafe);
    }
}

namespace {

// Runs `read` on a thread of its own and answers the message of the Error it
// threw ("" when it threw none). A read still going after 10 s fails the
// test: `unblock` is given the chance to end it (a writer for a FIFO), and
// when it cannot, the process ends there rather than hang or fill memory.
template <class Error, class Read> std::string refusal_within(Read read, const std::function<void()>& unblock = {}) {
    auto outcome = std::async(std::launch::async, [read] {
        try {
            read();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    });
    if (outcome.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return outcome.get();
    if (unblock) unblock();
    if (outcome.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        std::fprintf(stderr, "a read of a file that is no regular file was still going after 10 s\n");
        std::_Exit(1);
    }
    return "(the read waited for a writer, and ended only when one came: " + outcome.get() + ")";
}

// A FIFO at `path` with nobody writing, and the way to end a read that waits for one.
std::function<void()> fifo_at(const fs::path& path) {
    fs::remove(path);
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    return [path] {
        const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) ::close(fd);
    };
}

void symlink_at(const fs::path& path, const fs::path& target) {
    fs::remove(path);
    fs::create_symlink(target, path);
}

// The message names the file and what is wrong with it.
class Names : public Catch::MatcherBase<std::string> {
public:
    Names(const fs::path& file, std::string problem) : file_(file.string()), problem_(std::move(problem)) {}
    bool match(const std::string& message) const override {
        return message.find(file_) != std::string::npos && message.find(problem_) != std::string::npos;
    }
    std::string describe() const override { return "names " + file_ + " and says \"" + problem_ + "\""; }

private:
    std::string file_, problem_;
};

} // namespace

TEST_CASE("StoreSource refuses at once a program state file that is a FIFO, a device or too large", "[session]") {
    config::SessionSettings settings;
    settings.program_state_file = scratch("program-odd.json");
    const session::StoreSource stores(settings);
    const auto read = [&] { (void)stores.current(); };
    const auto& file = settings.program_state_file;

    const auto unblock = fifo_at(file);
    CHECK_THAT(refusal_within<session::StoreSourceError>(read, unblock), Names(file, "not a regular file"));

    symlink_at(file, "/dev/zero");
    CHECK_THAT(refusal_within<session::StoreSourceError>(read), Names(file, "not a regular file"));

    // Valid JSON, only too large: the size alone refuses it.
    fs::remove(file);
    std::ofstream(file) << R"({"running": true, "store": "shop", "user": "ann", "pad": ")"
                        << std::string(64 * 1024, 'x') << "\"}";
    CHECK_THAT(refusal_within<session::StoreSourceError>(read), Names(file, "larger than"));

    // A symlink to a regular file is read as that file.
    const auto real = scratch("program-real.json");
    std::ofstream(real) << R"({"running": true, "store": "shop", "user": "ann"})";
    symlink_at(file, real);
    CHECK(stores.current().store == "shop");
}

TEST_CASE("StoreCredentials refuses at once a credentials or settings file that is a FIFO or too large", "[session]") {
    config::SessionSettings settings;
    settings.credentials_file = scratch("credentials-odd");
    const session::StoreCredentials credentials(settings, false);
    const auto read = [&] { (void)credentials.login_for("shop", "ann"); };
    const auto& file = settings.credentials_file;

    const auto unblock = fifo_at(file);
    CHECK_THAT(refusal_within<session::CredentialsRefused>(read, unblock), Names(file, "not a regular file"));
    const auto every_password = [&] {
        if (!credentials.every_password().empty()) throw session::CredentialsRefused("a FIFO gave a password");
    };
    CHECK(refusal_within<session::CredentialsRefused>(every_password, unblock).empty());

    symlink_at(file, "/dev/zero");
    CHECK_THAT(refusal_within<session::CredentialsRefused>(read), Names(file, "not a regular file"));

    fs::remove(file);
    std::ofstream(file) << "a-password\n" << std::string(64 * 1024, '#') << "\n";
    ::chmod(file.c_str(), 0600);
    CHECK_THAT(refusal_within<session::CredentialsRefused>(read), Names(file, "larger than"));

    config::SessionSettings saved;
    saved.program_settings_file = scratch("program-settings-odd.json");
    const session::StoreCredentials from_program(saved, false);
    const auto unblock_settings = fifo_at(saved.program_settings_file);
    CHECK_THAT(refusal_within<session::CredentialsRefused>([&] { (void)from_program.login_for("shop", "ann"); },
                                                           unblock_settings),
               Names(saved.program_settings_file, "not a regular file"));
}

TEST_CASE("GrantTable refuses at once a grants file that is a FIFO, a device or too large", "[session]") {
    config::SessionSettings settings;
    settings.grants_file = scratch("grants-odd.yaml");
    const session::GrantTable grants(settings);
    const auto read = [&] { (void)grants.scopes("shop", "ann"); };
    const auto& file = settings.grants_file;

    const auto unblock = fifo_at(file);
    CHECK_THAT(refusal_within<session::GrantsUnavailable>(read, unblock), Names(file, "not a regular file"));

    symlink_at(file, "/dev/zero");
    CHECK_THAT(refusal_within<session::GrantsUnavailable>(read), Names(file, "not a regular file"));

    // Valid YAML, only too large.
    fs::remove(file);
    std::ofstream(file) << "grants:\n  shop:\n    ann: [orders.read]\n# " << std::string(1024 * 1024, 'x') << "\n";
    CHECK_THAT(refusal_within<session::GrantsUnavailable>(read), Names(file, "larger than"));

    fs::remove(file);
    CHECK_THAT(refusal_within<session::GrantsUnavailable>(read), Names(file, "does not exist"));
    std::ofstream(file) << "grants:\n  shop:\n    ann: [orders.read]\n";
    CHECK(grants.scopes("shop", "ann") == std::vector<std::string>{"orders.read"});
}
