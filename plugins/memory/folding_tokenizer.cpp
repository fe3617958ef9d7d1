#include "folding_tokenizer.hpp"

#include <new>
#include <stdexcept>

namespace memory {

fts5_api* fts5_api_of(sqlite3* db) {
    fts5_api* api = nullptr;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &stmt, nullptr) != SQLITE_OK) return nullptr;
    sqlite3_bind_pointer(stmt, 1, &api, "fts5_api_ptr", nullptr);
    sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    return api;
}

FoldingTokenizer::FoldingTokenizer(fts5_api* api) {
    if (!api) throw std::runtime_error("this SQLite has no FTS5");
    void* user_data = nullptr;
    if (api->xFindTokenizer(api, kTokenizerName, &user_data, &methods_) != SQLITE_OK)
        throw std::runtime_error("FTS5 has no unicode61 tokenizer");
    if (methods_.xCreate(user_data, const_cast<const char**>(kTokenizerArgs), 2, &tokenizer_) != SQLITE_OK)
        throw std::runtime_error("cannot create the unicode61 tokenizer");
}

FoldingTokenizer::~FoldingTokenizer() {
    if (tokenizer_) methods_.xDelete(tokenizer_);
}

namespace {

// Called from SQLite's C code: nothing may unwind through it.
int collect(void* out, int, const char* token, int length, int, int) {
    try {
        static_cast<std::vector<std::string>*>(out)->emplace_back(token, static_cast<std::size_t>(length));
        return SQLITE_OK;
    } catch (const std::bad_alloc&) {
        return SQLITE_NOMEM;
    }
}

} // namespace

std::vector<std::string> FoldingTokenizer::tokens(std::string_view text) const {
    std::vector<std::string> out;
    if (methods_.xTokenize(tokenizer_, &out, FTS5_TOKENIZE_DOCUMENT, text.data(), static_cast<int>(text.size()),
                           &collect) == SQLITE_NOMEM)
        throw std::bad_alloc();
    return out;
}

} // namespace memory
