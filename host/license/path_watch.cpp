#include "license/path_watch.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <utility>

namespace gatehouse::license {

namespace {

// What changes the entry that leads on, seen from its directory.
constexpr std::uint32_t kEntryEvents =
    IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
// What is written to a file, seen from its directory or on its own inode.
constexpr std::uint32_t kWriteEvents = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB;

// File systems whose inotify events cover every change to them: local ones,
// where every write passes through this kernel. A network or FUSE file
// system reports only what this machine did, so its paths keep the stat.
bool reports_every_change(const std::filesystem::path& at) {
    struct statfs fs {};
    if (::statfs(at.c_str(), &fs) != 0) return false;
    switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53:     // ext2, ext3, ext4
    case 0x58465342: // xfs
    case 0x9123683E: // btrfs
    case 0x01021994: // tmpfs
    case 0x858458F6: // ramfs
    case 0xF2F52010: // f2fs
    case 0x2FC12FC1: // zfs
    case 0x794C7630: // overlayfs: writes through it are reported (not writes made to its layers' folders directly)
        return true;
    default: return false;
    }
}

} // namespace

PathWatch::PathWatch() {
    descriptor_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    mount_table_ = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    ready_ = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event inotify{EPOLLIN, {.fd = descriptor_}};
    // The mount table reports a change as EPOLLPRI once, to each epoll_wait
    // that asks after it.
    epoll_event mounts{EPOLLPRI, {.fd = mount_table_}};
    if (descriptor_ < 0 || mount_table_ < 0 || ready_ < 0 ||
        ::epoll_ctl(ready_, EPOLL_CTL_ADD, descriptor_, &inotify) != 0 ||
        ::epoll_ctl(ready_, EPOLL_CTL_ADD, mount_table_, &mounts) != 0) {
        spdlog::warn("license files: cannot watch them ({}); each call looks at the files with stat(2) instead",
                     std::strerror(errno));
        for (int* fd : {&descriptor_, &mount_table_, &ready_})
            if (*fd >= 0) ::close(std::exchange(*fd, -1));
    }
}

PathWatch::~PathWatch() {
    for (int fd : {descriptor_, mount_table_, ready_})
        if (fd >= 0) ::close(fd);
}

// Runs without the lock, so a file system slow to answer statfs holds only the
// caller that follows a path on it; an event that arrives for the new watch
// before its interest is written down counts (concerns()).
bool PathWatch::watch(const std::filesystem::path& at, std::uint32_t mask, const std::string& name, bool every_entry) {
    if (!reports_every_change(at)) return false;
    const int wd = ::inotify_add_watch(descriptor_, at.c_str(), mask | IN_MASK_ADD | IN_DONT_FOLLOW);
    if (wd < 0) return false;
    std::lock_guard lock(mutex_);
    auto& interest = interests_[wd];
    if (every_entry)
        interest.every_entry = true;
    else
        interest.names.insert(name);
    return true;
}

bool PathWatch::follow(const std::filesystem::path& path, Scope scope) {
    if (descriptor_ < 0) return false;
    std::error_code error;
    const auto absolute = std::filesystem::absolute(path, error);
    if (error) return false;
    std::vector<std::string> parts;
    for (const auto& part : absolute.relative_path()) {
        const auto text = part.string();
        if (text.empty() || text == ".") continue;
        // Which directory `..` leads back to depends on links the watch
        // would have to follow as well; such a path keeps the stat.
        if (text == "..") return false;
        parts.push_back(text);
    }
    if (parts.empty()) return false;

    std::filesystem::path directory = absolute.root_path();
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const bool last = i + 1 == parts.size();
        // The directory is watched before its entry is looked at, so an entry
        // swapped in between is reported.
        const std::uint32_t mask = kEntryEvents | IN_ONLYDIR | (last && scope == Scope::file ? kWriteEvents : 0);
        if (!watch(directory, mask, parts[i], false)) return false;
        const auto next = directory / parts[i];
        struct stat st {};
        if (::lstat(next.c_str(), &st) != 0)
            // Not there (yet): its directory's watch reports its arrival.
            return errno == ENOENT || errno == ENOTDIR;
        if (S_ISLNK(st.st_mode)) return false;
        if (!last) {
            // A file where a directory should be: the path leads nowhere until
            // the entry is replaced, which its directory's watch reports.
            if (!S_ISDIR(st.st_mode)) return true;
            directory = next;
            continue;
        }
        if (scope == Scope::entries)
            return !S_ISDIR(st.st_mode) || watch(next, kEntryEvents | kWriteEvents | IN_ONLYDIR, std::string(), true);
        // The inode too: a write through another hard link is not reported
        // to this path's directory.
        return watch(next, kWriteEvents | IN_DELETE_SELF | IN_MOVE_SELF, std::string(), true);
    }
    return false;
}

bool PathWatch::concerns(int descriptor, const char* name, std::uint32_t mask) const {
    if (mask & (IN_Q_OVERFLOW | IN_IGNORED)) return true;
    const auto found = interests_.find(descriptor);
    // A watch being armed right now (or one whose interest was lost): it may
    // be about a followed path.
    if (found == interests_.end()) return true;
    // Without a name the event is about the watched directory or file itself.
    if (name == nullptr || found->second.every_entry) return true;
    return found->second.names.count(std::string_view(name)) > 0;
}

std::uint64_t PathWatch::generation() {
    std::lock_guard lock(mutex_);
    if (ready_ < 0) return generation_;
    epoll_event ready[2];
    int n;
    do
        n = ::epoll_wait(ready_, ready, 2, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        ++generation_; // cannot tell what changed: everything may have
        return generation_;
    }
    for (int i = 0; i < n; ++i) {
        if (ready[i].data.fd == mount_table_)
            ++generation_;
        else
            drain_events();
    }
    return generation_;
}

void PathWatch::drain_events() {
    alignas(inotify_event) char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(descriptor_, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            ++generation_;
            return;
        }
        bool moved = false;
        for (const char* at = buffer; at < buffer + n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(at);
            moved = concerns(event->wd, event->len ? event->name : nullptr, event->mask) || moved;
            if (event->mask & IN_IGNORED) interests_.erase(event->wd);
            at += sizeof(inotify_event) + event->len;
        }
        if (moved) ++generation_;
    }
}

} // namespace gatehouse::license
