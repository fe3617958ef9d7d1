#include "conversation_folders.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// Bytes of every regular file below dir_fd, never following links; the
// newest change seen goes to newest.
std::uint64_t measure(int dir_fd, std::time_t& newest, int depth = 0) {
    std::uint64_t total = 0;
    if (depth > 64) return total;
    for (const auto& name : entries(dir_fd)) {
        struct stat info {};
        if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (info.st_mtime > newest) newest = info.st_mtime;
        if (S_ISREG(info.st_mode)) total += static_cast<std::uint64_t>(info.st_size);
        if (S_ISDIR(info.st_mode)) {
            Descriptor sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (sub.get() >= 0) total += measure(sub.get(), newest, depth + 1);
        }
    }
    return total;
}

// Removes everything below dir_fd, then nothing else: links are unlinked,
// never followed.
bool empty_folder(int dir_fd, int depth = 0) {
    if (depth > 64) return false;
    bool ok = true;
    for (const auto& name : entries(dir_fd)) {
        struct stat info {};
        if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(info.st_mode)) {
            Descriptor sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
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

} // namespace

gh::Json ConversationFolders::list() const {
    gh::Json out = gh::Json::array();
    Descriptor root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) return out;
    for (const auto& name : entries(root.get())) {
        struct stat info {};
        if (::fstatat(root.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(info.st_mode)) continue;
        Descriptor folder(::openat(root.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (folder.get() < 0) continue;
        std::time_t newest = info.st_mtime;
        const auto size = measure(folder.get(), newest);
        out.push_back({{"name", name}, {"size", size}, {"last_change", iso_time(newest)}});
    }
    std::sort(out.begin(), out.end(), [](const gh::Json& a, const gh::Json& b) { return a["name"] < b["name"]; });
    return out;
}

gh::Json ConversationFolders::remove(const std::vector<std::string>& names) const {
    gh::Json deleted = gh::Json::array(), refused = gh::Json::array();
    Descriptor root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
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
        Descriptor folder(::openat(root.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (folder.get() < 0 || !empty_folder(folder.get()) ||
            ::unlinkat(root.get(), name.c_str(), AT_REMOVEDIR) != 0) {
            refused.push_back({{"name", name}, {"reason", "could not be removed completely"}});
            continue;
        }
        deleted.push_back(name);
    }
    return {{"deleted", deleted}, {"refused", refused}};
}
