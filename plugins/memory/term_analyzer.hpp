// The terms a note is indexed under and a query looks for: every word folded
// (case and diacritics, unicode61's rules) as an exact term, and beside it
// its Snowball stem as a stem term (WordStemmer). The FTS5 index (through the
// "gatehouse" tokenizer below), recall's phrases, tag keys, note lengths and
// the owners' term statistics all come from here, so they agree exactly.
#pragma once

#include "folding_tokenizer.hpp"
#include "word_stemmer.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memory {

class TermAnalyzer {
public:
    // Not thread-safe (unicode61 and Snowball fold and stem into buffers of
    // their own): one per connection.
    TermAnalyzer(fts5_api* api, const Stemming& stemming);

    // The folded words, in order, repeats kept.
    std::vector<std::string> words(std::string_view text) const { return folding_.tokens(text); }
    // kStemMarker + the word's stem, or nothing when its script is not stemmed.
    std::optional<std::string> stem_term(std::string_view word) const { return stemmer_.stem_term(word); }
    // Every distinct term (exact and stem) of the texts, sorted: what a note
    // adds to its owner's document frequencies.
    std::vector<std::string> distinct_terms(std::initializer_list<std::string_view> texts) const;
    // The same terms, each with how many times the texts hold it.
    std::vector<std::pair<std::string, uint32_t>> term_hits(std::initializer_list<std::string_view> texts) const;

    const Stemming& stemming() const { return stemming_; }

private:
    Stemming stemming_;
    FoldingTokenizer folding_;
    WordStemmer stemmer_;
};

// A TermAnalyzer with a private in-memory SQLite connection of its own (for
// unicode61), for callers without a notes connection: NoteStore, which checks
// and cuts texts before any backend sees them.
class StandaloneAnalyzer {
public:
    explicit StandaloneAnalyzer(const Stemming& stemming);
    ~StandaloneAnalyzer();
    StandaloneAnalyzer(const StandaloneAnalyzer&) = delete;
    StandaloneAnalyzer& operator=(const StandaloneAnalyzer&) = delete;
    const TermAnalyzer& operator*() const { return *analyzer_; }
    const TermAnalyzer* operator->() const { return analyzer_.get(); }

private:
    sqlite3* db_ = nullptr;
    std::unique_ptr<TermAnalyzer> analyzer_;
};

// Registers the FTS5 tokenizer "gatehouse" on a connection: unicode61
// (remove_diacritics 2) for the words, each followed by its stem term at the
// same position (FTS5_TOKEN_COLOCATED). Queried, a phrase that starts with
// kStemMarker is one stem term as it stands; any other is cut into exact
// words. Arguments: latin <language|none> cyrillic <language|none>.
void register_note_tokenizer(fts5_api* api);

// The notes_fts table's tokenize clause for these settings. It is part of the
// table's definition, so a host that finds another one rebuilds the index.
std::string note_tokenize_clause(const Stemming& stemming);

} // namespace memory
