#include "recall_ranking.hpp"

#include "term_analyzer.hpp"

#include <algorithm>
#include <cmath>

namespace memory {

namespace {

// BM25 (Robertson/Sparck Jones IDF with +1, as Lucene, so a word in most of a
// small owner's notes still counts a little rather than going negative).
constexpr double kK1 = 1.2;
constexpr double kB = 0.75;

} // namespace

std::vector<QueryPhrase> query_phrases(const TermAnalyzer& analyzer, const std::vector<std::string>& words) {
    std::vector<QueryPhrase> phrases;
    auto known = [&](const std::string& term) {
        return std::any_of(phrases.begin(), phrases.end(), [&](const QueryPhrase& p) { return p.term == term; });
    };
    for (std::size_t w = 0; w < words.size(); ++w) {
        phrases.push_back({words[w], w, 1.0, 0});
        if (auto stem = analyzer.stem_term(words[w]); stem && !known(*stem))
            phrases.push_back({std::move(*stem), w, kStemWeight, 0});
    }
    return phrases;
}

std::size_t rank_candidates(std::vector<Candidate>& candidates, const std::vector<QueryPhrase>& phrases,
                            const OwnerStatistics& owner, std::size_t limit) {
    const double note_count = std::max<double>(1, static_cast<double>(owner.notes));
    const double average_length = std::max(1.0, static_cast<double>(owner.tokens) / note_count);
    std::vector<double> weight(phrases.size());
    for (std::size_t p = 0; p < phrases.size(); ++p) {
        const double df = std::clamp<double>(static_cast<double>(phrases[p].notes), 0, note_count);
        weight[p] = phrases[p].weight * std::log(1.0 + (note_count - df + 0.5) / (df + 0.5));
    }
    for (auto& c : candidates) {
        const double length = c.length > 0 ? static_cast<double>(c.length) : average_length;
        const double norm = kK1 * (1 - kB + kB * length / average_length);
        c.score = 0;
        for (std::size_t p = 0; p < phrases.size() && p < c.counts.size(); ++p) {
            const double tf = c.counts[p];
            if (tf > 0) c.score += weight[p] * tf * (kK1 + 1) / (tf + norm);
        }
    }
    const auto top = std::min(candidates.size(), limit);
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(top), candidates.end(),
                      [](const Candidate& a, const Candidate& b) {
                          if (a.score != b.score) return a.score > b.score;
                          return a.number > b.number;
                      });
    return top;
}

std::vector<PlannedSearch> plan_searches(const std::vector<QueryPhrase>& phrases, std::size_t words) {
    std::vector<PlannedSearch> searches;
    PlannedSearch together;
    for (std::size_t w = 0; w < words; ++w) {
        PlannedSearch mine;
        int64_t most = 0;
        for (std::size_t p = 0; p < phrases.size(); ++p) {
            if (phrases[p].word != w) continue;
            mine.phrases.push_back(p);
            if (phrases[p].notes > most) {
                most = phrases[p].notes;
                mine.broadest = p;
            }
        }
        if (most == 0) continue;
        if (static_cast<std::size_t>(most) > kCandidatesPerWord) {
            mine.capped = true;
            searches.push_back(std::move(mine));
        } else {
            together.phrases.insert(together.phrases.end(), mine.phrases.begin(), mine.phrases.end());
        }
    }
    if (!together.phrases.empty()) searches.push_back(std::move(together));
    return searches;
}

} // namespace memory
