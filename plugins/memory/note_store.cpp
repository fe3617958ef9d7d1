#include "note_store.hpp"

#include "card_number_guard.hpp"
#include "postgres_notes.hpp"
#include "sqlite_notes.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_set>

namespace memory {

namespace {

using Json = nlohmann::json;

// The longest word a note may hold, in bytes: far past any word a person
// writes, well under what an index entry of PostgreSQL can hold.
constexpr std::size_t kMaxWordBytes = 1024;

bool is_space_only(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ++i;
        } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xA0) {
            i += 2; // no-break space
        } else if (c == 0xE3 && text.substr(i, 3) == "\xE3\x80\x80") {
            i += 3; // ideographic space
        } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                   static_cast<unsigned char>(text[i + 2]) <= 0x8B) {
            i += 3; // en quad .. zero-width space
        } else {
            return false;
        }
    }
    return true;
}

std::string trim(std::string_view s) {
    const char* ws = " \t\n\r\f\v";
    const auto first = s.find_first_not_of(ws);
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(ws);
    return std::string(s.substr(first, last - first + 1));
}

std::size_t utf8_chars(std::string_view s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
    std::string out;
    for (const auto& p : parts) {
        if (!out.empty()) out += separator;
        out += p;
    }
    return out;
}

// A tag is compared by its folded tokens, so "Договор", "договор" and
// "ДОГОВОР " are one tag; a tag with no word characters keeps its own text.
std::string tag_key(const TermAnalyzer& analyzer, const std::string& tag) {
    auto key = join(analyzer.words(tag), " ");
    return key.empty() ? tag : key;
}

struct CheckedTag {
    std::string shown;
    std::string key;
};

std::vector<CheckedTag> check_tags(const TermAnalyzer& analyzer, const std::vector<std::string>& tags,
                                   const NoteLimits& limits, const char* where) {
    if (tags.size() > limits.max_tags)
        throw NoteRejected(std::string(where) + " gives " + std::to_string(tags.size()) + " tags; at most " +
                           std::to_string(limits.max_tags) + " are allowed. Keep the few that matter.");
    std::vector<CheckedTag> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < tags.size(); ++i) {
        const std::string tag = trim(tags[i]);
        const std::string which = "Tag #" + std::to_string(i + 1);
        if (tag.empty() || is_space_only(tag)) throw NoteRejected(which + " is empty; give each tag a word or two.");
        if (utf8_chars(tag) > limits.max_tag_chars)
            throw NoteRejected(which + " is " + std::to_string(utf8_chars(tag)) +
                               " characters long; a tag is at most " + std::to_string(limits.max_tag_chars) +
                               " characters.");
        for (char c : tag)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                throw NoteRejected(which + " holds a control character (a line break, a tab); use plain words.");
        CheckedTag checked{tag, tag_key(analyzer, tag)};
        if (seen.insert(checked.key).second) out.push_back(std::move(checked));
    }
    return out;
}

} // namespace

bool is_postgres_url(const std::string& database) {
    return database.rfind("postgresql://", 0) == 0 || database.rfind("postgres://", 0) == 0;
}

NoteStore::NoteStore(StoreSettings settings)
    : settings_(std::move(settings)),
      analyzers_([stemming = settings_.stemming] { return std::make_unique<StandaloneAnalyzer>(stemming); }) {
    // The analyzer is tried once here, so a stemming setting naming a language
    // Snowball lacks fails the load. libstemmer itself opens at the first word
    // stemmed (stemmer_library.hpp): a host without it fails there, logged.
    analyzers_.acquire();
    if (is_postgres_url(settings_.database_path))
        backend_ = make_postgres_notes(settings_.database_path, settings_.stemming);
    else
        backend_ = make_sqlite_notes(settings_.database_path, settings_.synchronous, settings_.stemming);
}

NoteStore::~NoteStore() = default;

const char* NoteStore::backend_name() const {
    return is_postgres_url(settings_.database_path) ? "postgresql" : "sqlite";
}

int64_t NoteStore::remember(const Owner& owner, const NewNote& note) {
    const auto& limits = settings_.limits;
    if (note.text.size() > limits.max_text_bytes)
        throw NoteRejected("The note is " + std::to_string(note.text.size()) +
                           " bytes; this server keeps notes of up to " + std::to_string(limits.max_text_bytes) +
                           " bytes (settings.max_text_bytes). Shorten it or split it into several notes.");
    if (is_space_only(note.text)) throw NoteRejected("The note is empty; give remember the text to keep.");
    // A NUL would end the text where a C string ends (libpq sends text so)
    // while its words were counted past it; other control characters are
    // no text a person wrote. Tabs and line breaks are.
    for (std::size_t i = 0; i < note.text.size(); ++i)
        if (const auto c = static_cast<unsigned char>(note.text[i]);
            (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            throw NoteRejected("The note holds a control character (byte " + std::to_string(c) + " at offset " +
                               std::to_string(i) + "); keep text, tabs and line breaks only.");
    // The text, and each tag, which is kept and shown back as the text is.
    const auto refuse_card_number = [](const std::string& text, const std::string& what) {
        if (auto last4 = find_card_number(text))
            throw CardNumberInNote(what + " seems to hold a payment card number (one ending in " + *last4 +
                                       "); notes must not keep card numbers. Remove it and call remember again.",
                                   *last4);
    };
    refuse_card_number(note.text, "The note");
    for (const auto& tag : note.tags)
        refuse_card_number(tag, "A tag of the note");

    CheckedNote checked;
    {
        auto analyzer = analyzers_.acquire();
        const auto& words = **analyzer;
        Json shown = Json::array();
        for (auto& t : check_tags(words, note.tags, limits, "The note")) {
            shown.push_back(t.shown);
            checked.tag_keys.push_back(std::move(t.key));
        }
        checked.tags_json = shown.dump();
        checked.terms = words.term_hits({note.text, checked.tags_json});
        // Every word is a key of the index (PostgreSQL refuses an index
        // entry past 2704 bytes): a word longer than any a person writes, a
        // blob without spaces, is refused the same on both backends.
        for (const auto& [term, hits] : checked.terms)
            if (term.size() > kMaxWordBytes)
                throw NoteRejected("The note holds a word of " + std::to_string(term.size()) +
                                   " bytes without a space; words are kept up to " + std::to_string(kMaxWordBytes) +
                                   " bytes. Break it up, or leave it out of the note.");
        // The note's length in words: the hits of its exact terms (every
        // word is one), so the texts are cut once, not once more to count.
        for (const auto& [term, hits] : checked.terms)
            if (term.front() != kStemMarker) checked.tokens += hits;
    }
    checked.text = note.text;
    checked.critical = note.critical;
    checked.created_ms = now_ms();
    return backend_->remember(owner, checked);
}

std::vector<Note> NoteStore::recall(const Owner& owner, const RecallQuery& query) {
    const auto& limits = settings_.limits;
    CheckedQuery checked;
    checked.limit = std::min(query.limit <= 0 ? limits.default_recall : query.limit, limits.max_recall);
    checked.critical_only = query.critical_only;
    {
        auto analyzer = analyzers_.acquire();
        const auto& words_of = **analyzer;
        // Query text never reaches the index as syntax: it is cut into folded
        // words here, and each backend passes them on as plain values.
        if (query.query.size() > limits.max_text_bytes)
            throw NoteRejected("The query is " + std::to_string(query.query.size()) + " bytes; recall takes up to " +
                               std::to_string(limits.max_text_bytes) + ". Keep the telling words.");
        // In the order given, each once; counting stops past the limit, so a
        // query of a million words costs no more than one of 33.
        std::vector<std::string> words;
        std::unordered_set<std::string> seen;
        for (auto& w : words_of.words(query.query)) {
            if (!seen.insert(w).second) continue;
            if (words.size() == limits.max_query_words)
                throw NoteRejected("The query has more than " + std::to_string(limits.max_query_words) +
                                   " different words (" + std::to_string(words.size() + 1) +
                                   " at least); recall takes at most " + std::to_string(limits.max_query_words) +
                                   ". Keep the telling ones.");
            words.push_back(std::move(w));
        }
        for (auto& t : check_tags(words_of, query.tags, limits, "The query"))
            checked.tag_keys.push_back(std::move(t.key));
        checked.words = words.size();
        checked.phrases = query_phrases(words_of, words);
    }
    return backend_->recall(owner, checked);
}

bool NoteStore::forget(const Owner& owner, int64_t id) {
    return backend_->forget(owner, id);
}

int64_t NoteStore::forget_all(const Owner& owner) {
    return backend_->forget_all(owner);
}

std::vector<int64_t> NoteStore::unread_critical(const Owner& owner) {
    return backend_->unread_critical(owner);
}

std::vector<Note> NoteStore::critical_notes(const Owner& owner) {
    return backend_->critical_notes(owner);
}

} // namespace memory
