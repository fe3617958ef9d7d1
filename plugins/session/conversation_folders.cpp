#include "conversation_folders.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace {

class Descriptor {
public:
    explicit Descriptor(int fd) : fd_(fd) {}
    ~Descriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    int get() const { return fd_; }
    int release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_;
};

std::vector<std::string> entries(int dir_fd) {
    std::vector<std::string> names;
    int copy = ::dup(dir_fd);
    if (copy < 0) return names;
    DIR* dir = ::fdopendir(copy);
    if (!dir) {
        ::close(copy);
        return names;
    }
    ::rewinddir(dir);
    while (dirent* e = ::readdir(dir)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(dir);
    return names;
}

int open_below(int dir_fd, const std::string& name) {
    return ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

struct Measure {
    std::uint64_t bytes = 0;
    std::time_t newest = 0;
    bool too_deep = false; // a folder below kMaxDepth was not walked
};

// Bytes of every regular file below dir_fd, never following links.
void measure(int dir_fd, Measure& m, int depth) {
    for (const auto& name : entries(dir_fd)) {
        struct stat info {};
        if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (info.st_mtime > m.newest) m.newest = info.st_mtime;
        if (S_ISREG(info.st_mode)) m.bytes += static_cast<std::uint64_t>(info.st_size);
        if (!S_ISDIR(info.st_mode)) continue;
        if (depth + 1 > ConversationFolders::kMaxDepth) {
            m.too_deep = true;
            continue;
        }
        Descriptor sub(open_below(dir_fd, name));
        if (sub.get() >= 0) measure(sub.get(), m, depth + 1);
    }
}

// Removes everything below dir_fd, then nothing else: links are unlinked,
// never followed.
bool empty_folder(int dir_fd, int depth) {
    bool ok = true;
    for (const auto& name : entries(dir_fd)) {
        struct stat info {};
        if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(info.st_mode)) {
            if (depth + 1 > ConversationFolders::kMaxDepth) {
                ok = false; // grew deeper after the check: left, and said so
                continue;
            }
            Descriptor sub(open_below(dir_fd, name));
            ok = sub.get() >= 0 && empty_folder(sub.get(), depth + 1) && ok;
            ok = ::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 && ok;
        } else {
            ok = ::unlinkat(dir_fd, name.c_str(), 0) == 0 && ok;
        }
    }
    return ok;
}

std::string iso_time(std::time_t t) {
    std::tm utc{};
    gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

bool plain_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}

const std::string kTooDeep = "nests folders more than " + std::to_string(ConversationFolders::kMaxDepth) +
                             " levels deep, deeper than the host walks";

} // namespace

int ConversationFolders::open_root() const {
    // The operator's conversations_dir may be reached through links of the
    // operator's choosing; no level below it is ever followed.
    int at = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (at < 0) {
        if (errno == ENOENT) return -1;
        throw ConversationsUnreachable("the conversations folder cannot be opened");
    }
    for (const auto& level : levels_) {
        Descriptor parent(at);
        if (!plain_name(level)) throw ConversationsUnreachable("the host named an impossible folder level");
        at = open_below(parent.get(), level);
        if (at < 0) {
            if (errno == ENOENT) return -1;
            throw ConversationsUnreachable("a link or a file stands where a folder above the conversation folders "
                                           "should be");
        }
    }
    return at;
}

gh::Json ConversationFolders::list() const {
    gh::Json out = gh::Json::array();
    Descriptor root(open_root());
    if (root.get() < 0) return out;
    for (const auto& name : entries(root.get())) {
        struct stat info {};
        if (::fstatat(root.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(info.st_mode)) continue;
        Descriptor folder(open_below(root.get(), name));
        if (folder.get() < 0) continue;
        Measure m;
        m.newest = info.st_mtime;
        measure(folder.get(), m, 0);
        gh::Json entry = {{"name", name}, {"size", m.bytes}, {"last_change", iso_time(m.newest)}};
        if (m.too_deep) entry["incomplete"] = "it " + kTooDeep + ": size and last_change leave out what lies deeper";
        out.push_back(std::move(entry));
    }
    std::sort(out.begin(), out.end(), [](const gh::Json& a, const gh::Json& b) { return a["name"] < b["name"]; });
    return out;
}

gh::Json ConversationFolders::remove(const std::vector<std::string>& names) const {
    gh::Json deleted = gh::Json::array(), refused = gh::Json::array();
    Descriptor root(open_root());
    for (const auto& name : names) {
        if (!plain_name(name)) {
            refused.push_back({{"name", name}, {"reason", "not a folder name (no '/', '.', '..')"}});
            continue;
        }
        struct stat info {};
        if (root.get() < 0 || ::fstatat(root.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
            refused.push_back({{"name", name}, {"reason", "no such conversation folder"}});
            continue;
        }
        if (!S_ISDIR(info.st_mode)) {
            refused.push_back({{"name", name}, {"reason", "not a conversation folder (a link or a file); left alone"}});
            continue;
        }
        Descriptor folder(open_below(root.get(), name));
        if (folder.get() < 0) {
            refused.push_back({{"name", name}, {"reason", "could not be opened; left alone"}});
            continue;
        }
        // Checked before anything is removed, so such a folder is left whole.
        Measure m;
        measure(folder.get(), m, 0);
        if (m.too_deep) {
            refused.push_back({{"name", name}, {"reason", "it " + kTooDeep + "; left alone, nothing in it deleted"}});
            continue;
        }
        if (!empty_folder(folder.get(), 0) || ::unlinkat(root.get(), name.c_str(), AT_REMOVEDIR) != 0) {
            refused.push_back({{"name", name}, {"reason", "could not be removed completely"}});
            continue;
        }
        deleted.push_back(name);
    }
    return {{"deleted", deleted}, {"refused", refused}};
}
