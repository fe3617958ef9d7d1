// libstemmer, opened at the first word stemmed. It carries the tables of
// every Snowball language and encoding, and loading it relocates all of them
// (some 10 800 pointers over 90 pages: a sixth of a default host's page
// faults at start, and 0.7 MiB resident) where two languages are used, and
// only once a note is written or looked for. The header is included for the
// library's types only; nothing links against the library.
#pragma once

#include <libstemmer.h>

#include <optional>
#include <string>

namespace memory {

// The libstemmer functions WordStemmer calls.
struct Libstemmer {
    decltype(&::sb_stemmer_new) create;
    decltype(&::sb_stemmer_delete) destroy;
    decltype(&::sb_stemmer_stem) stem;
    decltype(&::sb_stemmer_length) length;
};

// The library's functions, opened on the first call (by the soname the build
// linked against, where the dynamic linker finds it) and kept open for the
// process's life. Throws std::runtime_error saying what is missing when the
// library or one of its functions cannot be found; every later call says the
// same.
const Libstemmer& libstemmer();

// Why the library by `soname`, or at `path`, cannot be had, or nothing. A
// file at `path` is enough and is not loaded (a start pays no load for
// words it may never stem); without one, the library is opened by `soname`
// now, and kept, as the first word would have.
std::optional<std::string> stemmer_library_problem(const char* soname, const char* path);

// The same for the library this family was built against: checked when the
// family starts with stemming on, so a missing library is said then, not at
// the first note written or looked for.
std::optional<std::string> libstemmer_problem();

} // namespace memory
