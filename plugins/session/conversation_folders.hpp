#pragma once

#include <gatehouse/plugin.hpp>

#include <string>
#include <vector>

// The conversation folders of one user in one store, as session_clear sees
// them. Every operation works relative to an open descriptor of the root and
// never follows a symlink, so nothing outside the root is read or removed.
class ConversationFolders {
public:
    explicit ConversationFolders(std::string root) : root_(std::move(root)) {}

    // [{"name", "size", "last_change"}] for every real folder in the root.
    gh::Json list() const;

    // Removes the named folders; answers {"deleted": [...], "refused": [{"name", "reason"}]}.
    gh::Json remove(const std::vector<std::string>& names) const;

private:
    std::string root_;
};
