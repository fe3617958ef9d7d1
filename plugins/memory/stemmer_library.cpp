#include "stemmer_library.hpp"

#include "library_symbols.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace memory {

namespace {

// What opening the library gave: the table, or why there is none.
struct Opened {
    Libstemmer table{};
    std::string problem;
};

constexpr const char* kLibrary = GATEHOUSE_STEMMER_SONAME;
// Where the build found it: a library outside the dynamic linker's paths is
// found there.
constexpr const char* kBuiltAgainst = GATEHOUSE_STEMMER_PATH;

// Never closed: every connection's tokenizer holds stemmers made by it.
void* open_library(const char* soname, const char* path, std::string& problem) {
    void* library = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!library) library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char* why = ::dlerror();
        problem = std::string("the Snowball stemmer library cannot be opened (") + (why ? why : soname) +
                  "): install libstemmer, which the memory family was built with, or set "
                  "domains.memory.settings.stemming: none";
    }
    return library;
}

Opened open_libstemmer() {
    Opened out;
    void* library = open_library(kLibrary, kBuiltAgainst, out.problem);
    if (!library) return out;
    auto bind = [&](auto& function, const char* name) { bind_symbol(library, kLibrary, function, name, out.problem); };
    auto& t = out.table;
    bind(t.create, "sb_stemmer_new");
    bind(t.destroy, "sb_stemmer_delete");
    bind(t.stem, "sb_stemmer_stem");
    bind(t.length, "sb_stemmer_length");
    return out;
}

} // namespace

const Libstemmer& libstemmer() {
    static const Opened opened = open_libstemmer(); // once, thread-safe
    if (!opened.problem.empty()) throw std::runtime_error(opened.problem);
    return opened.table;
}

std::optional<std::string> stemmer_library_problem(const char* soname, const char* path) {
    if (::access(path, R_OK) == 0) return std::nullopt;
    std::string problem;
    if (open_library(soname, path, problem)) return std::nullopt;
    return problem;
}

std::optional<std::string> libstemmer_problem() {
    return stemmer_library_problem(kLibrary, kBuiltAgainst);
}

} // namespace memory
