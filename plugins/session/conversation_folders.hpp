#pragma once

#include <gatehouse/plugin.hpp>

#include <stdexcept>
#include <string>
#include <vector>

// A folder above the topic folders is a link or a file: nothing below it is
// listed or removed. what() is the sentence for the agent.
class ConversationsUnreachable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The conversation folders of one principal, as one user in one store, as
// session_clear sees them. The root is reached from `dir` one level at a
// time, each opened relative to its parent with O_NOFOLLOW, and everything
// below it works relative to open descriptors and never follows a link, so
// nothing outside the root is read or removed.
class ConversationFolders {
public:
    // How deep below a topic folder the walks go; a folder nested deeper is
    // reported, never silently miscounted or half deleted.
    static constexpr int kMaxDepth = 64;

    ConversationFolders(std::string dir, std::vector<std::string> levels)
        : dir_(std::move(dir)), levels_(std::move(levels)) {}

    // [{"name", "size", "last_change"}] for every real folder in the root;
    // a folder nested deeper than kMaxDepth also has "incomplete" (why size
    // and last_change leave part of it out). Throws ConversationsUnreachable.
    gh::Json list() const;

    // Removes the named folders; answers {"deleted": [...], "refused": [{"name", "reason"}]}.
    // A folder nested deeper than kMaxDepth is refused before anything in it is removed.
    // Throws ConversationsUnreachable.
    gh::Json remove(const std::vector<std::string>& names) const;

private:
    int open_root() const; // -1: the root does not exist (yet)

    std::string dir_;
    std::vector<std::string> levels_;
};
