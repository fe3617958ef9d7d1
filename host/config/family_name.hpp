#pragma once

#include <string_view>

namespace gatehouse::config {

// A family's name, the same rule wherever one comes from (a plugin's
// descriptor, an upstreams: entry): 1 to 64 of lowercase ASCII letters,
// digits, '_' and '-'. It prefixes tool names and names state keys.
inline bool valid_family_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

} // namespace gatehouse::config
