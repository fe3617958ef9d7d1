#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

namespace gatehouse::license {

// Tells whether anything that decides what a path holds may have changed,
// for the price of one epoll_wait(2) that does not wait (over an inotify
// descriptor) instead of a stat(2) of every path on every call.
//
// The kernel queues an event on the descriptor as part of the change itself,
// so a change that is complete before generation() is called is always
// counted by it: a caller that remembers the generation its answer was made
// at, and makes it again when the generation moves, sees every change on its
// next call, as a stat would. What decides a path is watched whole: each
// directory on the way for the entry that leads on (created, removed,
// renamed, its mode changed), the last directory for the entry itself and
// what is written to it, and the file's own inode (for a write through
// another hard link).
//
// A mount or unmount anywhere in the host's mount namespace (a bind mount
// over a folder on the way changes what the path leads to without any inotify
// event) moves the generation too: the mount table is watched beside the
// inotify descriptor, and one epoll_wait(2) with no wait asks both.
//
// follow() refuses — and the caller keeps its stat per call — where events
// would not be complete: a symbolic link on the way (its target's
// directories are not the path's), a file system that is not known to report
// every change (NFS, SMB, FUSE and the like do not report other machines'
// writes), no inotify at all, or the watch limit reached. Writes through a
// shared mapping are never reported by inotify; a license file is replaced,
// not mapped. Thread-safe.
class PathWatch {
public:
    PathWatch();
    ~PathWatch();
    PathWatch(const PathWatch&) = delete;
    PathWatch& operator=(const PathWatch&) = delete;

    enum class Scope {
        file,    // the entry at the path, and what is written to it
        entries, // a directory: any entry in it, and what is written to each
    };

    // Arms the watches for `path` (again, after a change: a directory that
    // now exists is watched too). True when every change to what the path
    // holds is reported from now on; false when follow() cannot promise that.
    bool follow(const std::filesystem::path& path, Scope scope);

    // The number of changes reported so far, after taking every event the
    // kernel has queued. It moves on with any event that concerns a followed
    // path, and with any lost or removed watch.
    std::uint64_t generation();

    // One lookup's reading of the generation: taken from the watch on first
    // need, then the same for the rest of the lookup. Every path the lookup
    // looks at afterwards is looked at after that reading, so a change that
    // a look misses moves the next lookup's reading; a lookup of several
    // paths thus asks the kernel once, not once per path.
    class Reading {
    public:
        explicit Reading(PathWatch& watch) : watch_(watch) {}
        std::uint64_t generation() {
            if (!generation_) generation_ = watch_.generation();
            return *generation_;
        }

    private:
        PathWatch& watch_;
        std::optional<std::uint64_t> generation_;
    };

private:
    // What of a watched directory concerns a followed path: every entry, or
    // the named ones.
    struct Interest {
        bool every_entry = false;
        std::set<std::string, std::less<>> names;
    };
    bool watch(const std::filesystem::path& at, std::uint32_t mask, const std::string& name, bool every_entry);
    bool concerns(int descriptor, const char* name, std::uint32_t mask) const;
    void drain_events();

    int descriptor_ = -1;  // inotify
    int mount_table_ = -1; // /proc/self/mountinfo
    int ready_ = -1;       // epoll over both
    std::mutex mutex_;
    std::unordered_map<int, Interest> interests_; // by watch descriptor
    std::uint64_t generation_ = 0;
};

} // namespace gatehouse::license
