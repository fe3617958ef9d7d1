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

} // namespace gatehouse::upstream
