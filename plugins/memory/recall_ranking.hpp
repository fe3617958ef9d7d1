// How recall scores its candidates, the same for every backend: BM25 over the
// owner's own statistics (document frequencies from the owner's term counts,
// the owner's note count and average length), never the whole table's, so the
// order of one owner's results says nothing about anybody else's notes.
//
// A query word is looked for twice: as its exact folded form and as its stem.
// A stem hit counts kStemWeight of an exact one, and a note with the exact
// form also holds the stem, so an exact match ranks above a note that only
// shares the stem (at equal length).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memory {

class TermAnalyzer;

inline constexpr double kStemWeight = 0.5;

// A word in more of the owner's notes than this is looked for only in its
// newest kCandidatesPerWord notes, so recall's cost stays bounded however
// common a word is. Its weight (IDF) still counts every note it is in.
inline constexpr std::size_t kCandidatesPerWord = 1000;

struct QueryPhrase {
    std::string term;     // exact word, or kStemMarker + stem
    std::size_t word = 0; // which query word it belongs to
    double weight = 1;    // 1 for the exact form, kStemWeight for the stem
    int64_t notes = 0;    // how many of the owner's notes hold it
};

// The phrases of the query words (already folded and de-duplicated): each
// word's exact form, then its stem term when it has one no earlier word gave.
std::vector<QueryPhrase> query_phrases(const TermAnalyzer& analyzer, const std::vector<std::string>& words);

struct Candidate {
    int64_t id = 0;               // the backend's row id
    int64_t number = 0;           // the owner's note number (ties go to the newer)
    int64_t length = 0;           // the note's exact-word count
    std::vector<uint32_t> counts; // hits of each phrase, in query_phrases' order
    double score = 0;
};

struct OwnerStatistics {
    int64_t notes = 0;
    int64_t tokens = 0;
};

// Which searches one recall makes (SQLite asks for the counts, then makes
// these; PostgreSQL makes the same plan in SQL from its own counts, in the
// statement that reads them, see postgres_notes.cpp): the words in at most
// kCandidatesPerWord of the owner's notes together, every note of theirs; a
// word in more alone, in its newest kCandidatesPerWord notes that hold its
// broadest phrase. A note found by a search counts the hits of every phrase
// of that search, so only an old note's hits of a common word can go
// uncounted. Words in none of the owner's notes are left out.
struct PlannedSearch {
    std::vector<std::size_t> phrases; // indices into the query's phrases
    bool capped = false;
    std::size_t broadest = 0; // for a capped search: the phrase in the most notes
};
std::vector<PlannedSearch> plan_searches(const std::vector<QueryPhrase>& phrases, std::size_t words);

// Scores the candidates and moves the best `limit` to the front, best first;
// returns how many that is.
std::size_t rank_candidates(std::vector<Candidate>& candidates, const std::vector<QueryPhrase>& phrases,
                            const OwnerStatistics& owner, std::size_t limit);

} // namespace memory
