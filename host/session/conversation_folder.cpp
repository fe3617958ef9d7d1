#include "session/conversation_folder.hpp"

#include "crypto/openssl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

namespace gatehouse::session {

namespace {

// Well below NAME_MAX (255), with room for the ".principal" suffix.
constexpr std::size_t kMaxEncodedName = 200;

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

// An encoded name never holds '.', so the digest's form cannot be one.
std::string level_name(const std::string& text) {
    std::string encoded = encode_name(text);
    if (encoded.size() <= kMaxEncodedName) return encoded;
    return crypto::sha256_hex(text) + ".sha256";
}

class Descriptor {
public:
    explicit Descriptor(int fd) : fd_(fd) {}
    ~Descriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    Descriptor(Descriptor&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Descriptor& operator=(Descriptor&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    int get() const { return fd_; }

private:
    int fd_;
};

// Makes `name` below `parent` when missing and opens it, never through a link.
Descriptor make_and_open(const Descriptor& parent, const std::string& name, const std::string& what) {
    if (::mkdirat(parent.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
        throw ConversationFolderUnsafe("cannot create " + what + " '" + name + "': " + std::strerror(errno));
    Descriptor opened(::openat(parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (opened.get() < 0)
        throw ConversationFolderUnsafe(what + " '" + name + "' is not a plain folder (" + std::strerror(errno) +
                                       "; a link or a file stands in its place)");
    return opened;
}

} // namespace

std::filesystem::path ConversationsPlace::root() const {
    std::filesystem::path out = dir;
    for (const auto& level : levels)
        out /= level;
    return out;
}

ConversationsPlace conversations_place(const std::filesystem::path& conversations_dir, const std::string& owner_key,
                                       const std::string& store, const std::string& user) {
    return {conversations_dir, {level_name(owner_key) + ".principal", level_name(store), level_name(user)}};
}

namespace {

// How many entries the folder open at `at` holds (. and .. aside).
std::size_t entries_in(const Descriptor& at) {
    const int copy = ::dup(at.get());
    if (copy < 0) throw ConversationFolderUnsafe("cannot read the user's folder: " + std::string(std::strerror(errno)));
    DIR* listing = ::fdopendir(copy);
    if (!listing) {
        ::close(copy);
        throw ConversationFolderUnsafe("cannot read the user's folder: " + std::string(std::strerror(errno)));
    }
    ::rewinddir(listing);
    std::size_t count = 0;
    while (const dirent* entry = ::readdir(listing))
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) ++count;
    ::closedir(listing);
    return count;
}

} // namespace

std::filesystem::path open_conversation_folder(const ConversationsPlace& place, const std::string& topic,
                                               std::size_t max_topics) {
    // The operator's folder may be reached through links of the operator's
    // choosing; everything below it is the host's and is never followed.
    std::error_code ec;
    std::filesystem::create_directories(place.dir, ec);
    if (ec)
        throw ConversationFolderUnsafe("cannot create the conversations folder " + place.dir.string() + ": " +
                                       ec.message());
    Descriptor at(::open(place.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (at.get() < 0) throw ConversationFolderUnsafe("cannot open the conversations folder " + place.dir.string());
    static const char* const kWhat[] = {"the principal's folder", "the store's folder", "the user's folder"};
    for (std::size_t i = 0; i < place.levels.size(); ++i)
        at = make_and_open(at, place.levels[i], i < 3 ? kWhat[i] : "a conversations folder");
    struct stat found {};
    if (::fstatat(at.get(), topic.c_str(), &found, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
        // Two topics opened at once may both pass: the bound holds within the calls in flight.
        if (const std::size_t held = entries_in(at); held >= max_topics)
            throw ConversationFoldersFull(std::to_string(held) + " conversation folders (session.max_topics: " +
                                          std::to_string(max_topics) + ")");
    }
    make_and_open(at, topic, "the conversation folder of topic");
    return place.root() / topic;
}

} // namespace gatehouse::session
