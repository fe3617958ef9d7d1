// PathWatch: the one read(2) that tells the license check whether a file may
// have changed. Every kind of change an operator makes must move the
// generation before the next call; changes beside the path must not.
#include "license/path_watch.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <sys/mount.h>
#include <unistd.h>

using gatehouse::license::PathWatch;
namespace fs = std::filesystem;

namespace {

struct WatchScene {
    fs::path dir;
    PathWatch watch;

    WatchScene() {
        static std::atomic<int> counter{0};
        dir = fs::temp_directory_path() /
              ("gatehouse-watch-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~WatchScene() { fs::remove_all(dir); }

    static void write(const fs::path& at, const std::string& text) { std::ofstream(at, std::ios::trunc) << text; }

    // Whether the generation moved since the last ask, following `path`
    // again as the license check does after each change.
    bool moved(const fs::path& path, PathWatch::Scope scope = PathWatch::Scope::file) {
        const auto now = watch.generation();
        const bool changed = now != seen_;
        seen_ = now;
        REQUIRE(watch.follow(path, scope));
        return changed;
    }
    std::uint64_t seen_ = 0;
};

// Where the temp folder is on a file system the watch does not trust (a
// network or FUSE one), PathWatch refuses to follow, as it must, and these
// cases have nothing to show.
bool temp_followable() {
    return PathWatch().follow(fs::temp_directory_path() / "gatehouse-watch-probe", PathWatch::Scope::file);
}

} // namespace

TEST_CASE("PathWatch: every change to a followed file moves the generation; changes beside it do not", "[license]") {
    WatchScene s;
    const auto file = s.dir / "license.json";
    REQUIRE(s.watch.follow(file, PathWatch::Scope::file)); // not there yet
    s.seen_ = s.watch.generation();
    CHECK_FALSE(s.moved(file));

    s.write(s.dir / "other.json", "beside it");
    s.write(s.dir / "license.json.new", "written beside, not yet moved in");
    CHECK_FALSE(s.moved(file));

    fs::rename(s.dir / "license.json.new", file);
    CHECK(s.moved(file)); // moved in
    CHECK_FALSE(s.moved(file));

    s.write(file, "edited in place");
    CHECK(s.moved(file));
    fs::permissions(file, fs::perms::owner_read);
    CHECK(s.moved(file));
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    CHECK(s.moved(file));

    // A write through another name of the same inode, in another directory.
    fs::create_directories(s.dir / "elsewhere");
    fs::create_hard_link(file, s.dir / "elsewhere" / "same.json");
    CHECK(s.moved(file)); // its link count changed
    s.write(s.dir / "elsewhere" / "same.json", "written through the other link");
    CHECK(s.moved(file));

    fs::remove(file);
    CHECK(s.moved(file));

    // The directory itself replaced: the path now leads into another one.
    fs::rename(s.dir / "elsewhere", s.dir / "moved");
    CHECK_FALSE(s.moved(file)); // nothing on the path's way
    const auto nested = s.dir / "licenses" / "license.json";
    REQUIRE(s.watch.follow(nested, PathWatch::Scope::file)); // the directory is not there yet
    s.seen_ = s.watch.generation();
    fs::rename(s.dir / "moved", s.dir / "licenses");
    CHECK(s.moved(nested)); // the directory arrived, with same.json but no license.json
    s.write(s.dir / "licenses" / "fresh.json", "a new inode, watched by nothing");
    CHECK_FALSE(s.moved(nested));
    fs::rename(s.dir / "licenses" / "fresh.json", nested); // reported by the directory's watch alone
    CHECK(s.moved(nested));
    fs::rename(s.dir / "licenses", s.dir / "gone");
    CHECK(s.moved(nested));
}

TEST_CASE("PathWatch: a followed directory reports every entry, and what cannot be followed is refused", "[license]") {
    WatchScene s;
    const auto shelf = s.dir / "licenses.d";
    fs::create_directories(shelf);
    REQUIRE(s.watch.follow(shelf, PathWatch::Scope::entries));
    s.seen_ = s.watch.generation();
    s.write(shelf / "acme.json", "{}");
    CHECK(s.moved(shelf, PathWatch::Scope::entries));
    s.write(shelf / ".hidden", "any entry counts");
    CHECK(s.moved(shelf, PathWatch::Scope::entries));
    fs::remove(shelf / "acme.json");
    CHECK(s.moved(shelf, PathWatch::Scope::entries));
    s.write(s.dir / "beside.json", "not in it");
    CHECK_FALSE(s.moved(shelf, PathWatch::Scope::entries));

    // A symbolic link on the way: its target's directories are not the
    // path's, so the caller keeps its stat.
    fs::create_directory_symlink(shelf, s.dir / "link");
    CHECK_FALSE(s.watch.follow(s.dir / "link" / "acme.json", PathWatch::Scope::file));
    fs::create_symlink(shelf / "acme.json", s.dir / "license.json");
    CHECK_FALSE(s.watch.follow(s.dir / "license.json", PathWatch::Scope::file));
    CHECK_FALSE(s.watch.follow(shelf / ".." / "license.json", PathWatch::Scope::file));
}

TEST_CASE("PathWatch: a folder on the way bind-mounted over moves the generation", "[license]") {
    if (!temp_followable()) {
        WARN("the temp folder's file system is not followed; nothing to check");
        return;
    }
    WatchScene s;
    fs::create_directories(s.dir / "etc");
    fs::create_directories(s.dir / "other");
    s.write(s.dir / "etc" / "license.json", "the one installed");
    s.write(s.dir / "other" / "license.json", "another");
    const auto file = s.dir / "etc" / "license.json";
    REQUIRE(s.watch.follow(file, PathWatch::Scope::file));
    s.seen_ = s.watch.generation();
    // No inotify event tells of a mount: the mount table does.
    if (::mount((s.dir / "other").c_str(), (s.dir / "etc").c_str(), nullptr, MS_BIND, nullptr) != 0) {
        WARN("cannot bind-mount here (" << std::strerror(errno) << "); nothing to check");
        return;
    }
    const bool moved = s.watch.generation() != s.seen_;
    ::umount2((s.dir / "etc").c_str(), MNT_DETACH);
    CHECK(moved);
    CHECK(s.watch.generation() != s.seen_);
}
