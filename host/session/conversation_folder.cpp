#include "session/conversation_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace gatehouse::session {

namespace {

std::string encode_name(const std::string& name) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : name) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '@') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        }
    }
    return out.empty() ? "%" : out;
}

class Descriptor {
public:
    explicit Descriptor(int fd) : fd_(fd) {}
    ~Descriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

} // namespace

std::filesystem::path conversations_root(const std::filesystem::path& conversations_dir, const std::string& store,
                                         const std::string& user) {
    return conversations_dir / encode_name(store) / encode_name(user);
}

std::filesystem::path open_conversation_folder(const std::filesystem::path& root, const std::string& topic) {
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec)
        throw ConversationFolderUnsafe("cannot create the conversations root " + root.string() + ": " + ec.message());
    Descriptor dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) throw ConversationFolderUnsafe("cannot open the conversations root " + root.string());
    if (::mkdirat(dir.get(), topic.c_str(), 0700) != 0 && errno != EEXIST)
        throw ConversationFolderUnsafe("cannot create the conversation folder for topic '" + topic + "'");
    Descriptor folder(::openat(dir.get(), topic.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (folder.get() < 0)
        throw ConversationFolderUnsafe("the conversation folder for topic '" + topic +
                                       "' is not a plain folder (a link or a file stands in its place)");
    return root / topic;
}

} // namespace gatehouse::session
