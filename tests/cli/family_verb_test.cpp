// Verbs a family adds to the command line (ABI 1.6), through the real
// gatehouse binary: the verb runs inside the family with the state its init
// made, its output and exit status are the command's, and --help lists it.
#include "child_process.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

using gatehouse::test::ChildResult;
using gatehouse::test::plugin_dir;
using gatehouse::test::run_child;
using gatehouse::test::TempDir;

namespace {

ChildResult run_gatehouse(const std::vector<std::string>& args) {
    return run_child(GATEHOUSE_BINARY, args, "",
                     {{"GATEHOUSE_LOG", ""}, {"GATEHOUSE_DATA_DIR", "/tmp/gatehouse-cli-test-data"}});
}

// A config loading the verb fixture (and echo, which adds no verb).
std::string verb_config(const TempDir& dir, const std::string& greeting = "Good morning") {
    return dir
        .write("gatehouse.yaml", "plugin_dir: " + plugin_dir().string() + "\nplugins: [echo.so, verb.so]\n" +
                                     "data_dir: " + (dir.path() / "data").string() +
                                     "\ndomains:\n  verb:\n    settings: {greeting: " + greeting + "}\n")
        .string();
}

// A config loading only the sessions family, with two bots.
std::string sessions_config(const TempDir& dir) {
    return dir
        .write("gatehouse.yaml", "plugins: [sessions.so]\ndata_dir: " + (dir.path() / "data").string() +
                                     "\ndomains:\n  sessions:\n    settings:\n      bots:\n"
                                     "        - {slug: shop-bot, name: Shop Bot}\n"
                                     "        - {slug: other-bot, name: Other Bot}\n")
        .string();
}

std::string file_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_CASE("a family's verb runs through the ABI with the state its init made", "[cli][verb]") {
    TempDir dir;
    const std::string file = verb_config(dir);
    auto r = run_gatehouse({"greet", "World", "--config", file});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "Good morning, World! (greet from " + file + ")\n");

    // Another configuration, another state: nothing of the first run stayed.
    TempDir other;
    auto again = run_gatehouse({"--config", verb_config(other, "Hi"), "greet", "Ann"});
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.out, Catch::StartsWith("Hi, Ann! (greet from "));
}

TEST_CASE("a family's verb sets the exit status and writes its errors to stderr", "[cli][verb]") {
    TempDir dir;
    const std::string file = verb_config(dir);
    auto usage = run_gatehouse({"greet", "--config", file});
    CHECK(usage.exit_code == 2);
    CHECK(usage.out.empty());
    CHECK_THAT(usage.err, Catch::Contains("gatehouse: usage: gatehouse greet NAME"));

    auto thrown = run_gatehouse({"verb-fail", "--config", file});
    CHECK(thrown.exit_code == 1);
    CHECK(thrown.out.empty());
    CHECK_THAT(thrown.err, Catch::Contains("gatehouse verb-fail: the verb failed on purpose"));

    CHECK(run_gatehouse({"verb-exit", "7", "--config", file}).exit_code == 7);
}

TEST_CASE("a verb no loaded family declares is an unknown command", "[cli][verb]") {
    TempDir dir;
    const std::string echo_only =
        dir.write("echo.yaml", "plugin_dir: " + plugin_dir().string() + "\nplugins: [echo.so]\n").string();
    auto r = run_gatehouse({"greet", "World", "--config", echo_only});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("unknown command 'greet'"));
    CHECK_THAT(r.err, Catch::Contains("The families of " + echo_only + " add no verbs."));
    CHECK(r.out.empty());

    // A mistyped verb: the usage lists the families' verbs beside the host's.
    const std::string file = verb_config(dir);
    auto typo = run_gatehouse({"gret", "World", "--config", file});
    CHECK(typo.exit_code == 2);
    CHECK_THAT(typo.err, Catch::Contains("unknown command 'gret'"));
    CHECK_THAT(typo.err, Catch::Contains("Usage:"));
    CHECK_THAT(typo.err, Catch::Contains("Verbs of the families in " + file + ":"));
    CHECK_THAT(typo.err, Catch::Contains("  gatehouse greet NAME [--config FILE]\n"));
    CHECK(typo.out.empty());
}

TEST_CASE("gatehouse --help lists the verbs of the configuration's families", "[cli][verb]") {
    TempDir dir;
    const std::string file = verb_config(dir);
    auto r = run_gatehouse({"--help", "--config", file});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("Usage:"));
    CHECK_THAT(r.out, Catch::Contains("Verbs of the families in " + file + ":"));
    CHECK_THAT(r.out, Catch::Contains("  gatehouse greet NAME [--config FILE]\n"));
    CHECK_THAT(r.out, Catch::Contains("Greets NAME with the configured greeting. (verb family)"));

    auto unreadable = run_gatehouse({"--help", "--config", (dir.path() / "missing.yaml").string()});
    CHECK(unreadable.exit_code == 0);
    CHECK_THAT(unreadable.out, Catch::Contains("`gatehouse --help --config FILE` lists those"));
}

TEST_CASE("the sessions family's bot verb writes its own file, whole", "[cli][verb]") {
    TempDir dir;
    const std::string file = sessions_config(dir);
    auto list = run_gatehouse({"bot", "--config", file});
    INFO(list.err);
    CHECK(list.exit_code == 0);
    CHECK(list.out == "* shop-bot  Shop Bot\n  other-bot  Other Bot\n");

    auto unknown = run_gatehouse({"bot", "use", "no-such-bot", "--config", file});
    CHECK(unknown.exit_code == 1);
    CHECK_THAT(unknown.err, Catch::Contains("gatehouse: no bot 'no-such-bot' under domains.sessions.settings.bots in " +
                                            file + "; `gatehouse bot` lists them"));

    auto wrong = run_gatehouse({"bot", "choose", "--config", file});
    CHECK(wrong.exit_code == 2);
    CHECK_THAT(wrong.err, Catch::Contains("gatehouse: usage: gatehouse bot use SLUG [--config FILE]"));

    auto use = run_gatehouse({"bot", "use", "other-bot", "--config", file});
    CHECK(use.exit_code == 0);
    CHECK(use.out == "active bot: other-bot\n");
    const auto chosen = dir.path() / "data" / "sessions" / "active-bot";
    CHECK(file_text(chosen) == "other-bot\n");
    // The folders it made are private, and it left nothing beside its file.
    using std::filesystem::perms;
    CHECK(std::filesystem::status(chosen.parent_path()).permissions() == perms::owner_all);
    CHECK(std::filesystem::status(chosen.parent_path().parent_path()).permissions() == perms::owner_all);
    CHECK(std::distance(std::filesystem::directory_iterator(chosen.parent_path()),
                        std::filesystem::directory_iterator()) == 1);
    CHECK(run_gatehouse({"bot", "--config", file}).out == "  shop-bot  Shop Bot\n* other-bot  Other Bot\n");
}

TEST_CASE("gatehouse bot use never writes through a link planted at a temporary file's name", "[cli][verb]") {
    TempDir dir;
    const std::string file = sessions_config(dir);
    const auto folder = dir.path() / "data" / "sessions";
    std::filesystem::create_directories(folder);
    const auto target = dir.write("precious.txt", "kept as it is\n");
    const auto planted = folder / "active-bot.tmp";
    std::filesystem::create_symlink(target, planted);

    auto use = run_gatehouse({"bot", "use", "other-bot", "--config", file});
    INFO(use.err);
    CHECK(use.exit_code == 0);
    CHECK(file_text(target) == "kept as it is\n");
    CHECK(std::filesystem::is_symlink(planted));
    CHECK(std::filesystem::read_symlink(planted) == target);
    const auto chosen = folder / "active-bot";
    CHECK_FALSE(std::filesystem::is_symlink(chosen));
    CHECK(file_text(chosen) == "other-bot\n");
}

TEST_CASE("gatehouse bot use says why when its folder cannot be made", "[cli][verb]") {
    TempDir dir;
    const std::string file = sessions_config(dir);
    dir.write("data/sessions", "a file where the folder belongs\n");
    auto use = run_gatehouse({"bot", "use", "other-bot", "--config", file});
    CHECK(use.exit_code == 1);
    CHECK_THAT(use.err,
               Catch::Contains("gatehouse: " + (dir.path() / "data" / "sessions").string() + " is not a folder"));
    CHECK(file_text(dir.path() / "data" / "sessions") == "a file where the folder belongs\n");
}

TEST_CASE("gatehouse docs never writes through a link planted at a temporary file's name", "[cli][docs]") {
    TempDir dir;
    const std::string file = sessions_config(dir);
    const auto out = dir.path() / "reference";
    std::filesystem::create_directories(out);
    const auto target = dir.write("precious.txt", "kept as it is\n");
    const auto planted = out / "sessions.md.tmp";
    std::filesystem::create_symlink(target, planted);

    auto docs = run_gatehouse({"docs", "--out", out.string(), "--config", file});
    INFO(docs.err);
    CHECK(docs.exit_code == 0);
    CHECK(file_text(target) == "kept as it is\n");
    CHECK(std::filesystem::is_symlink(planted));
    CHECK_FALSE(std::filesystem::is_symlink(out / "sessions.md"));
    CHECK_THAT(file_text(out / "sessions.md"), Catch::StartsWith("# The `sessions` domain"));
    CHECK(std::filesystem::status(out / "sessions.md").permissions() ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
           std::filesystem::perms::group_read | std::filesystem::perms::others_read));

    dir.write("blocked", "a file where the folder belongs\n");
    auto blocked = run_gatehouse({"docs", "--out", (dir.path() / "blocked").string(), "--config", file});
    CHECK(blocked.exit_code == 1);
    CHECK_THAT(blocked.err,
               Catch::Contains("gatehouse: cannot create the folder " + (dir.path() / "blocked").string()));
}
