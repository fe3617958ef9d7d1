#include "word_stemmer.hpp"

#include <libstemmer.h>

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

sb_stemmer* make(const char* script, const std::string& language) {
    if (language.empty()) return nullptr;
    if (!script_has(script, language))
        throw std::invalid_argument("no Snowball stemmer \"" + language + "\" for " + script + " words");
    sb_stemmer* s = sb_stemmer_new(language.c_str(), "UTF_8");
    if (!s) throw std::invalid_argument("libstemmer has no stemmer \"" + language + "\"");
    return s;
}

} // namespace

bool stemmer_language_known(std::string_view script, std::string_view language) {
    return script_has(script, language);
}

WordStemmer::WordStemmer(const Stemming& stemming) {
    latin_ = make("latin", stemming.latin);
    try {
        cyrillic_ = make("cyrillic", stemming.cyrillic);
    } catch (...) {
        if (latin_) sb_stemmer_delete(latin_);
        throw;
    }
}

WordStemmer::~WordStemmer() {
    if (latin_) sb_stemmer_delete(latin_);
    if (cyrillic_) sb_stemmer_delete(cyrillic_);
}

std::optional<std::string> WordStemmer::stem_term(std::string_view folded) const {
    sb_stemmer* stemmer = nullptr;
    switch (script_of(folded)) {
    case Script::latin: stemmer = latin_; break;
    case Script::cyrillic: stemmer = cyrillic_; break;
    case Script::other: break;
    }
    if (!stemmer || folded.empty()) return std::nullopt;
    const sb_symbol* stem =
        sb_stemmer_stem(stemmer, reinterpret_cast<const sb_symbol*>(folded.data()), static_cast<int>(folded.size()));
    if (!stem) throw std::bad_alloc();
    std::string term(1, kStemMarker);
    term.append(reinterpret_cast<const char*>(stem), static_cast<std::size_t>(sb_stemmer_length(stemmer)));
    return term;
}

} // namespace memory
