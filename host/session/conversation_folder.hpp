#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace gatehouse::session {

// The folder cannot be used safely (a symlink, a file, no permission).
class ConversationFolderUnsafe : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The user's folder already holds as many topics' folders as it may
// (session.max_topics): a new topic would make one more.
class ConversationFoldersFull : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where the conversations of one principal, as one user in one store, live:
// <conversations_dir>/<principal>/<store>/<user>. Each level's name is the
// percent-encoded text (its SHA-256 when that would be too long for a file
// name), so an odd name can never step out of its parent; the principal's
// ends in ".principal", which no store folder of the layout before
// principals had their own can, so the two never meet.
struct ConversationsPlace {
    std::filesystem::path dir;       // the operator's conversations_dir
    std::vector<std::string> levels; // the folder names below dir: principal, store, user

    std::filesystem::path root() const;
};

ConversationsPlace conversations_place(const std::filesystem::path& conversations_dir, const std::string& owner_key,
                                       const std::string& store, const std::string& user);

// Creates (when missing) and checks <root>/<topic>; answers its path. The
// topic is already a valid one-word name. Below `dir` every level and the
// topic folder are created with mkdirat and opened with O_NOFOLLOW relative
// to their parent, so a link planted at any of them is refused, never
// followed. A topic whose folder is new when the user's folder already
// holds `max_topics` entries throws ConversationFoldersFull: a folder is
// kept until session_clear deletes it, so topics without end would fill the
// disk's inodes, which every caller shares.
std::filesystem::path open_conversation_folder(const ConversationsPlace& place, const std::string& topic,
                                               std::size_t max_topics);

} // namespace gatehouse::session
