#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gatehouse::session {

// The folder cannot be used safely (a symlink, a file, no permission).
class ConversationFolderUnsafe : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where the conversations of one user in one store live:
// <conversations_dir>/<store>/<user>, each name percent-encoded so that an
// odd store or user name can never step out of the folder.
std::filesystem::path conversations_root(const std::filesystem::path& conversations_dir, const std::string& store,
                                         const std::string& user);

// Creates (when missing) and checks <root>/<topic>. The topic is already a
// valid one-word name; the folder is opened with O_NOFOLLOW relative to the
// root, so a symlink planted under the topic's name is refused, not followed.
std::filesystem::path open_conversation_folder(const std::filesystem::path& root, const std::string& topic);

} // namespace gatehouse::session
