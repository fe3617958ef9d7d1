#pragma once

#include <gatehouse/plugin.h>

#include <string>
#include <string_view>

namespace gatehouse::plugins {

// Text across the ABI: a gh_str with a null pointer is empty, whatever its length says.
inline std::string_view abi_view(gh_str s) {
    return s.ptr ? std::string_view(s.ptr, s.len) : std::string_view();
}

inline std::string abi_copy(gh_str s) {
    return std::string(abi_view(s));
}

// A gh_str of text the host keeps for as long as the callee may read it.
inline gh_str abi_str(std::string_view text) {
    return gh_str{text.data(), text.size()};
}

} // namespace gatehouse::plugins
