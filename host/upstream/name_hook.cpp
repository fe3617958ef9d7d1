#include "upstream/name_hook.hpp"

namespace gatehouse::upstream {

std::string NameHook::apply(std::string_view name) const {
    std::string out;
    out.reserve(pattern_.size() + name.size() + upstream_.size());
    for (std::size_t i = 0; i < pattern_.size();) {
        if (pattern_.compare(i, 6, "{name}") == 0) {
            out += name;
            i += 6;
        } else if (pattern_.compare(i, 10, "{upstream}") == 0) {
            out += upstream_;
            i += 10;
        } else {
            out += pattern_[i++];
        }
    }
    return out;
}

bool NameHook::could_have_named(std::string_view published) const {
    // apply() of a name that cannot occur in a published one marks where the name goes.
    const std::string marked = apply("\n");
    const auto at = marked.find('\n');
    const std::string_view before(marked.data(), at), after(marked.data() + at + 1, marked.size() - at - 1);
    if (before.empty() && after.empty()) return false;
    return published.size() > before.size() + after.size() && published.starts_with(before) &&
           published.ends_with(after);
}

} // namespace gatehouse::upstream
