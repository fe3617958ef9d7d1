#include "term_analyzer.hpp"

#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>

namespace memory {

TermAnalyzer::TermAnalyzer(fts5_api* api, const Stemming& stemming)
    : stemming_(stemming), folding_(api), stemmer_(stemming) {}

std::vector<std::string> TermAnalyzer::distinct_terms(std::initializer_list<std::string_view> texts) const {
    std::vector<std::string> terms;
    for (auto& [term, hits] : term_hits(texts))
        terms.push_back(std::move(term));
    return terms;
}

std::vector<std::pair<std::string, uint32_t>>
TermAnalyzer::term_hits(std::initializer_list<std::string_view> texts) const {
    std::vector<std::string> all;
    for (auto text : texts)
        for (auto& word : folding_.tokens(text)) {
            if (auto stem = stemmer_.stem_term(word)) all.push_back(std::move(*stem));
            all.push_back(std::move(word));
        }
    std::sort(all.begin(), all.end());
    std::vector<std::pair<std::string, uint32_t>> hits;
    for (auto& term : all) {
        if (!hits.empty() && hits.back().first == term)
            ++hits.back().second;
        else
            hits.emplace_back(std::move(term), 1);
    }
    return hits;
}

StandaloneAnalyzer::StandaloneAnalyzer(const Stemming& stemming) {
    if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
        sqlite3_close(db_);
        throw std::runtime_error("cannot open an in-memory SQLite connection for the analyzer");
    }
    try {
        analyzer_ = std::make_unique<TermAnalyzer>(fts5_api_of(db_), stemming);
    } catch (...) {
        sqlite3_close(db_);
        throw;
    }
}

StandaloneAnalyzer::~StandaloneAnalyzer() {
    analyzer_.reset();
    sqlite3_close(db_);
}

namespace {

// One instance per FTS table per connection, made by FTS5 with the table's
// tokenize arguments.
struct NoteTokenizer {
    fts5_tokenizer unicode61{};
    Fts5Tokenizer* words = nullptr;
    std::unique_ptr<WordStemmer> stemmer;

    ~NoteTokenizer() {
        if (words) unicode61.xDelete(words);
    }
};

struct TokenizeCall {
    const NoteTokenizer* tokenizer;
    void* context;
    int (*emit)(void*, int, const char*, int, int, int);
};

int emit_with_stem(void* call_ptr, int flags, const char* token, int length, int start, int end) {
    auto& call = *static_cast<TokenizeCall*>(call_ptr);
    int rc = call.emit(call.context, flags, token, length, start, end);
    if (rc != SQLITE_OK) return rc;
    try {
        if (auto stem = call.tokenizer->stemmer->stem_term(std::string_view(token, static_cast<std::size_t>(length))))
            rc =
                call.emit(call.context, FTS5_TOKEN_COLOCATED, stem->data(), static_cast<int>(stem->size()), start, end);
    } catch (const std::bad_alloc&) {
        return SQLITE_NOMEM;
    } catch (const std::exception&) {
        return SQLITE_ERROR; // libstemmer could not be opened: nothing may escape into SQLite
    }
    return rc;
}

Stemming stemming_from(const char** args, int count) {
    Stemming stemming;
    for (int i = 0; i + 1 < count; i += 2) {
        const std::string key = args[i], value = args[i + 1];
        const std::string language = value == "none" ? "" : value;
        if (key == "latin")
            stemming.latin = language;
        else if (key == "cyrillic")
            stemming.cyrillic = language;
        else
            throw std::invalid_argument("unknown tokenizer argument " + key);
    }
    if (count % 2 != 0) throw std::invalid_argument("tokenizer arguments come in pairs");
    return stemming;
}

int create(void* api_ptr, const char** args, int count, Fts5Tokenizer** out) {
    auto* api = static_cast<fts5_api*>(api_ptr);
    try {
        auto tokenizer = std::make_unique<NoteTokenizer>();
        tokenizer->stemmer = std::make_unique<WordStemmer>(stemming_from(args, count));
        void* user_data = nullptr;
        if (api->xFindTokenizer(api, kTokenizerName, &user_data, &tokenizer->unicode61) != SQLITE_OK)
            return SQLITE_ERROR;
        if (tokenizer->unicode61.xCreate(user_data, const_cast<const char**>(kTokenizerArgs), 2, &tokenizer->words) !=
            SQLITE_OK)
            return SQLITE_ERROR;
        *out = reinterpret_cast<Fts5Tokenizer*>(tokenizer.release());
        return SQLITE_OK;
    } catch (const std::bad_alloc&) {
        return SQLITE_NOMEM;
    } catch (const std::exception&) {
        return SQLITE_ERROR;
    }
}

void destroy(Fts5Tokenizer* tokenizer) {
    delete reinterpret_cast<NoteTokenizer*>(tokenizer);
}

int tokenize(Fts5Tokenizer* tokenizer_ptr, void* context, int flags, const char* text, int length,
             int (*emit)(void*, int, const char*, int, int, int)) {
    const auto* tokenizer = reinterpret_cast<const NoteTokenizer*>(tokenizer_ptr);
    if (flags & FTS5_TOKENIZE_QUERY) {
        // Recall writes stem phrases itself; a user's words never start with
        // the marker (unicode61 drops control characters).
        if (length > 0 && text[0] == kStemMarker) return emit(context, 0, text, length, 0, length);
        return tokenizer->unicode61.xTokenize(tokenizer->words, context, flags, text, length, emit);
    }
    TokenizeCall call{tokenizer, context, emit};
    return tokenizer->unicode61.xTokenize(tokenizer->words, &call, flags, text, length, &emit_with_stem);
}

} // namespace

void register_note_tokenizer(fts5_api* api) {
    fts5_tokenizer methods{&create, &destroy, &tokenize};
    if (api->xCreateTokenizer(api, "gatehouse", api, &methods, nullptr) != SQLITE_OK)
        throw std::runtime_error("cannot register the gatehouse FTS5 tokenizer");
}

std::string note_tokenize_clause(const Stemming& stemming) {
    auto or_none = [](const std::string& language) { return language.empty() ? std::string("none") : language; };
    return "tokenize = 'gatehouse latin " + or_none(stemming.latin) + " cyrillic " + or_none(stemming.cyrillic) + "'";
}

} // namespace memory
