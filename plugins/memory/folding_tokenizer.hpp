// The words of a text as the notes index cuts them ("unicode61
// remove_diacritics 2"), reachable from C++: recall builds its MATCH
// expression from these tokens, tags are compared by them, and a note's length
// is counted by them, so all three agree with the index exactly.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

namespace memory {

// The word tokenizer under the index's own ("gatehouse", term_analyzer.hpp);
// one place, because the index and this class must never disagree.
inline constexpr const char* kTokenizerName = "unicode61";
inline constexpr const char* kTokenizerArgs[] = {"remove_diacritics", "2"};

class FoldingTokenizer {
public:
    // Not thread-safe: unicode61 folds into a buffer of its own. One per
    // connection.
    explicit FoldingTokenizer(fts5_api* api);
    ~FoldingTokenizer();
    FoldingTokenizer(const FoldingTokenizer&) = delete;
    FoldingTokenizer& operator=(const FoldingTokenizer&) = delete;

    // Case-folded, diacritics-free tokens, in order, repeats kept.
    std::vector<std::string> tokens(std::string_view text) const;

private:
    fts5_tokenizer methods_{};
    Fts5Tokenizer* tokenizer_ = nullptr;
};

// The fts5_api of a connection (NULL when FTS5 is not compiled in).
fts5_api* fts5_api_of(sqlite3* db);

} // namespace memory
