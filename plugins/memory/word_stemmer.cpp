#include "word_stemmer.hpp"

#include "stemmer_library.hpp"

#include <new>
#include <stdexcept>

namespace memory {

namespace {

enum class Script { latin, cyrillic, other };

// The script of a whole folded token, or other when it mixes scripts or holds
// a digit: "covid19", "iPhone15" and "ООО2" are kept as they are.
Script script_of(std::string_view token) {
    Script seen = Script::other;
    bool first = true;
    for (std::size_t i = 0; i < token.size();) {
        const auto c = static_cast<unsigned char>(token[i]);
        Script here;
        std::size_t width = 1;
        if (c >= 'a' && c <= 'z') {
            here = Script::latin;
        } else if ((c == 0xD0 || c == 0xD1 || c == 0xD2 || c == 0xD3) && i + 1 < token.size()) {
            here = Script::cyrillic; // U+0400..U+04FF
            width = 2;
        } else {
            return Script::other;
        }
        if (first) {
            seen = here;
            first = false;
        } else if (here != seen) {
            return Script::other;
        }
        i += width;
    }
    return seen;
}

bool script_has(std::string_view script, std::string_view language) {
    // Snowball's languages by the script their words are written in.
    static constexpr std::string_view kLatin[] = {"basque",     "catalan",  "danish",     "dutch",     "english",
                                                  "finnish",    "french",   "german",     "hungarian", "indonesian",
                                                  "irish",      "italian",  "lithuanian", "norwegian", "porter",
                                                  "portuguese", "romanian", "spanish",    "swedish",   "turkish"};
    static constexpr std::string_view kCyrillic[] = {"russian", "serbian"};
    if (script == "latin") {
        for (auto l : kLatin)
            if (l == language) return true;
    } else if (script == "cyrillic") {
        for (auto l : kCyrillic)
            if (l == language) return true;
    }
    return false;
}

void check(const char* script, const std::string& language) {
    if (!language.empty() && !script_has(script, language))
        throw std::invalid_argument("no Snowball stemmer \"" + language + "\" for " + script + " words");
}

// The stemmer in `slot`, made on the first ask.
sb_stemmer* made(sb_stemmer*& slot, const std::string& language) {
    if (slot || language.empty()) return slot;
    slot = libstemmer().create(language.c_str(), "UTF_8");
    if (!slot) throw std::runtime_error("libstemmer has no stemmer \"" + language + "\"");
    return slot;
}

} // namespace

bool stemmer_language_known(std::string_view script, std::string_view language) {
    return script_has(script, language);
}

WordStemmer::WordStemmer(const Stemming& stemming) : stemming_(stemming) {
    check("latin", stemming.latin);
    check("cyrillic", stemming.cyrillic);
}

WordStemmer::~WordStemmer() {
    // Made only by libstemmer(), which is then open.
    if (latin_) libstemmer().destroy(latin_);
    if (cyrillic_) libstemmer().destroy(cyrillic_);
}

std::optional<std::string> WordStemmer::stem_term(std::string_view folded) const {
    sb_stemmer* stemmer = nullptr;
    switch (script_of(folded)) {
    case Script::latin: stemmer = made(latin_, stemming_.latin); break;
    case Script::cyrillic: stemmer = made(cyrillic_, stemming_.cyrillic); break;
    case Script::other: break;
    }
    if (!stemmer || folded.empty()) return std::nullopt;
    const Libstemmer& library = libstemmer();
    const sb_symbol* stem =
        library.stem(stemmer, reinterpret_cast<const sb_symbol*>(folded.data()), static_cast<int>(folded.size()));
    if (!stem) throw std::bad_alloc();
    std::string term(1, kStemMarker);
    term.append(reinterpret_cast<const char*>(stem), static_cast<std::size_t>(library.length(stemmer)));
    return term;
}

} // namespace memory
