// The binding of a library the memory family opens on first use
// (libpq_library.cpp, stemmer_library.cpp): each function looked up by name,
// the first one missing said once.
#pragma once

#include <dlfcn.h>

#include <string>
#include <string_view>

namespace memory {

// Sets `function` to the symbol `name` of `library` (null when absent). When
// it is absent and `problem` is still empty, `problem` becomes "<library_name>
// has no <name>", followed by ": <why>" when `why` is given.
template <class Function>
void bind_symbol(void* library, const char* library_name, Function& function, const char* name, std::string& problem,
                 std::string_view why = {}) {
    function = reinterpret_cast<Function>(::dlsym(library, name));
    if (function || !problem.empty()) return;
    problem = std::string(library_name) + " has no " + name;
    if (!why.empty()) problem.append(": ").append(why);
}

} // namespace memory
