// Snowball stems of folded words, so "contracts" finds "contract" and
// «договора» finds «Договор». The language is chosen per word by its script:
// a word of Latin letters takes the Latin-script language, a word of Cyrillic
// letters the Cyrillic-script one; digits, mixed words and other scripts are
// not stemmed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

struct sb_stemmer;

namespace memory {

// Which Snowball language stems each script ("" = that script is not
// stemmed). Stored in the index's definition: the index is rebuilt when it
// changes.
struct Stemming {
    std::string latin = "english";
    std::string cyrillic = "russian";

    bool enabled() const { return !latin.empty() || !cyrillic.empty(); }
    bool operator==(const Stemming&) const = default;
};

// The Snowball languages libstemmer knows with a script (for the checks of
// the YAML): true when `language` may stem words of `script`.
bool stemmer_language_known(std::string_view script, std::string_view language);

// A stem term is written with this byte first. unicode61 never emits a
// control character in a token, so no word of a note or a query can be taken
// for a stem, and an exact term never matches a stem term.
inline constexpr char kStemMarker = '\x01';

class WordStemmer {
public:
    // Throws std::invalid_argument naming a language Snowball has no stemmer
    // of for its script. A script's stemmer (and libstemmer itself,
    // stemmer_library.hpp) is made at the first word of that script.
    explicit WordStemmer(const Stemming& stemming);
    ~WordStemmer();
    WordStemmer(const WordStemmer&) = delete;
    WordStemmer& operator=(const WordStemmer&) = delete;

    // The stem term (kStemMarker + stem) of one folded token, or nothing when
    // its script is not stemmed. Not thread-safe: Snowball stems into a buffer
    // of its own, and the stemmers are made on first use; one per connection.
    // Throws std::runtime_error when libstemmer cannot be opened.
    std::optional<std::string> stem_term(std::string_view folded) const;

private:
    Stemming stemming_;
    mutable sb_stemmer* latin_ = nullptr;
    mutable sb_stemmer* cyrillic_ = nullptr;
};

} // namespace memory
