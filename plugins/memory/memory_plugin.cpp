// Family "memory": notes an agent keeps for a person, across conversations.
//   remember     write        keeps a note (text, tags, critical flag); refuses card numbers
//                             (CARD_NUMBER_IN_NOTE)
//   recall       read         finds notes by words and tags, or the latest; marks critical ones read
//                             (reads_critical: runs while a session still has critical notes unread),
//                             so it is not readOnlyHint: it writes those marks
//   forget       destructive  deletes one note by its id (NOTE_NOT_FOUND when there is none)
//   forget_all   destructive  deletes every note of the caller (needs confirm: true)
// No tool reaches beyond this server's note database (openWorldHint false).
//
// Every call works on the caller's own notes only: the owner is the
// principal's owner key plus, inside a session, the store (see NoteStore).
// For the gate, the family lists the owner's critical notes at
// session_connect (id = the note number in decimal, title = the start of the
// text), and recall reports every critical note it shows back to the host.
// Settings (domains.memory.settings): database (file path, relative to the
// family's data_dir, default <data_dir>/memory.db; or a postgresql:// URL), max_text_bytes (default
// 65536), synchronous (normal | full; default normal), stemming (none, or a
// mapping {latin: <Snowball language|none>, cyrillic: <...|none>}; default
// {latin: english, cyrillic: russian}).
#include "note_store.hpp"
#include "postgres_connection.hpp"
#include "stemmer_library.hpp"

#include <gatehouse/plugin.hpp>

#include <ctime>
#include <filesystem>
#include <memory>

namespace {

using memory::NoteStore;
using memory::Owner;

// The plugin's state: the store and its connections, made by init for this
// host and closed at its shutdown.
static gh::Plugin<NoteStore> plugin{
    {.name = "gatehouse-memory", .version = "1.0.0", .family = "memory", .reentrant = true}};

Owner owner_of(const gh::Call& call) {
    const auto context = call.context();
    Owner owner;
    // The owner key tells apart callers the subject alone would not (a token
    // whose `sub` is the local user's name).
    owner.principal = context.value(gh::Json::json_pointer("/principal/owner"), std::string());
    // Inside a session (a later host) the store joins the owner key, so one
    // person's notes for two shops never mix.
    owner.store = context.value(gh::Json::json_pointer("/session/store"), std::string());
    if (owner.principal.empty())
        throw gh::Refusal("NO_PRINCIPAL",
                          "The host did not say who is calling, so there is no one to keep notes for. Tell the "
                          "operator: the memory family needs a principal.",
                          {{"action", "tell the operator"}});
    return owner;
}

// The start of a note's text, for the gate's list of unread critical notes:
// whole words up to about 60 bytes, never cut inside a UTF-8 character.
std::string critical_title(const std::string& text) {
    constexpr std::size_t kMax = 60;
    std::string flat;
    for (char c : text)
        flat += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (flat.size() <= kMax) return flat;
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(flat[cut]) & 0xC0) == 0x80)
        --cut;
    if (const auto space = flat.rfind(' ', cut); space != std::string::npos && space > kMax / 2) cut = space;
    return flat.substr(0, cut) + "\u2026";
}

std::string iso_time(int64_t ms) {
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buffer[40];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buffer, static_cast<int>(ms % 1000));
    return out;
}

// What a call did to the notes when the database was lost under it: a read
// changed nothing; a change that is the same done twice (forget) may have
// been committed just before the connection went, and a retry spoils
// nothing; remember may have been committed too, and a blind retry would
// keep the note twice.
enum class Effect { reads, repeatable_writes, writes };

// The one place a store exception becomes what the agent reads.
template <class F> auto guarded(F&& body, Effect effect = Effect::reads) {
    try {
        return body();
    } catch (const memory::CardNumberInNote& e) {
        // A rule of the family, not a slip in the arguments: refused with a code.
        throw gh::Refusal("CARD_NUMBER_IN_NOTE", e.what(), {{"argument", "text"}, {"last4", e.last4()}});
    } catch (const memory::NoteRejected& e) {
        throw gh::InvalidArguments(e.what());
    } catch (const memory::NotesUnavailable& e) {
        // What went wrong is the operator's to read; the agent is told to wait.
        plugin.log(gh::LogLevel::warning, std::string("memory: ") + e.what());
        if (effect == Effect::writes)
            throw gh::Refusal("NOTES_UNAVAILABLE",
                              "The notes database was lost during this change, which may or may not have been kept. "
                              "In a few seconds, recall to see whether it was, then try again only if it was not.",
                              {{"action", "recall_then_retry"}, {"retryAfterSeconds", 2}});
        if (effect == Effect::repeatable_writes)
            throw gh::Refusal("NOTES_UNAVAILABLE",
                              "The notes database was lost during this change, which may or may not have been made; "
                              "making it again is safe. Try again in a few seconds.",
                              {{"action", "retry"}, {"retryAfterSeconds", 2}});
        throw gh::Refusal("NOTES_UNAVAILABLE",
                          "The notes database cannot be reached just now; nothing was changed. Try again in a few "
                          "seconds.",
                          {{"action", "retry"}, {"retryAfterSeconds", 2}});
    }
}

const auto& remember = plugin.tool({
    .name = "remember",
    .title = "Remember a note",
    .description = "Keeps a note for the person you work for, to find later with recall. Give short factual text, "
                   "optional tags (at most 32, each at most 64 characters) and critical: true for something that must "
                   "be read before other work. Never put secrets in a note: text holding a payment card number is "
                   "refused. Returns the note's id.",
    .input_schema = R"({"type":"object","properties":{
        "text":{"type":"string","description":"The note."},
        "tags":{"type":"array","items":{"type":"string"},"description":"Words to file the note under."},
        "critical":{"type":"boolean","description":"Must be read before other work."}},
        "required":["text"],"additionalProperties":false})",
    .output_schema = R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]})",
    .risk = gh::Risk::write,
    .annotations = R"({"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false})",
    .handler =
        [](NoteStore& store, gh::Call& call) {
            return guarded(
                [&] {
                    memory::NewNote note;
                    note.text = call.arg<std::string>("text");
                    note.tags = call.arg_or("tags", std::vector<std::string>{});
                    note.critical = call.arg_or("critical", false);
                    const int64_t id = store.remember(owner_of(call), note);
                    return gh::Result::structured({{"id", id}}, "Remembered as note " + std::to_string(id) + ".");
                },
                Effect::writes);
        },
});

const auto& recall = plugin.tool({
    .name = "recall",
    .title = "Recall notes",
    .description = "Finds the person's notes. With a query, notes whose text or tags hold any of its words, best "
                   "matches first (then newest); without one, the newest notes. Tags narrow the result to notes "
                   "carrying all of them. Case and accents do not matter. limit defaults to 10, at most 50. "
                   "critical: true returns only the critical notes: call it so when a session asks you to read "
                   "critical notes (CRITICAL_NOTES_UNREAD) - reading them here is what lets other tools run.",
    .input_schema = R"({"type":"object","properties":{
        "query":{"type":"string","description":"Words to look for; empty for the latest notes."},
        "tags":{"type":"array","items":{"type":"string"},"description":"Only notes with all of these tags."},
        "critical":{"type":"boolean","description":"Only the critical notes."},
        "limit":{"type":"integer","minimum":1,"description":"How many notes at most (default 10, capped at 50)."}},
        "additionalProperties":false})",
    .output_schema = R"({"type":"object","properties":{"notes":{"type":"array","items":{"type":"object",
        "properties":{"id":{"type":"integer"},"text":{"type":"string"},
                      "tags":{"type":"array","items":{"type":"string"}},
                      "critical":{"type":"boolean"},"created":{"type":"string"}},
        "required":["id","text","tags","critical","created"]}},
        "unread_critical_notes":{"type":"integer",
            "description":"Inside a session, when critical notes were shown: how many are still unread."}},
        "required":["notes"]})",
    .risk = gh::Risk::read,
    // Marks the critical notes it shows as read (the gate then lets other
    // tools run): a write, though only of marks, and the same again changes nothing.
    .annotations = R"({"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})",
    .handler =
        [](NoteStore& store, gh::Call& call) {
            return guarded([&] {
                memory::RecallQuery query;
                query.query = call.arg_or("query", std::string());
                query.tags = call.arg_or("tags", std::vector<std::string>{});
                query.limit = static_cast<int>(std::min<int64_t>(call.arg_or<int64_t>("limit", 0), 1000));
                query.critical_only = call.arg_or("critical", false);
                const auto found = store.recall(owner_of(call), query);
                gh::Json notes = gh::Json::array();
                std::string text = found.empty() ? "No notes found." : "";
                for (const auto& n : found) {
                    notes.push_back({{"id", n.id},
                                     {"text", n.text},
                                     {"tags", n.tags},
                                     {"critical", n.critical},
                                     {"created", iso_time(n.created_ms)}});
                    text += "Note " + std::to_string(n.id) + (n.critical ? " (critical)" : "") + ", " +
                            iso_time(n.created_ms);
                    if (!n.tags.empty()) text += ", tags: " + gh::Json(n.tags).dump();
                    text += "\n" + n.text + "\n\n";
                }
                gh::Json answer = {{"notes", std::move(notes)}};
                // Inside a session every critical note shown is reported (by
                // the ids critical_items gave), so the gate lets the other
                // tools run once all were shown. Outside one there is no gate.
                std::vector<std::string> shown;
                for (const auto& n : found)
                    if (n.critical) shown.push_back(std::to_string(n.id));
                if (!shown.empty() && call.context().contains("session")) {
                    const auto unread = call.critical_read(shown).value("unread", int64_t{0});
                    answer["unread_critical_notes"] = unread;
                    if (unread > 0)
                        text += std::to_string(unread) +
                                " critical note(s) of this session are still unread: recall with critical: true.\n";
                }
                return gh::Result::structured(std::move(answer), std::move(text));
            });
        },
    .reads_critical = true,
});

const auto& forget = plugin.tool({
    .name = "forget",
    .title = "Forget a note",
    .description = "Deletes one of the person's notes by its id (from remember or recall). This cannot be undone.",
    .input_schema = R"({"type":"object","properties":{"note_id":{"type":"integer","description":"The note's id."}},
        "required":["note_id"],"additionalProperties":false})",
    .output_schema = R"({"type":"object","properties":{"id":{"type":"integer"},"deleted":{"type":"boolean"}},
        "required":["id","deleted"]})",
    .risk = gh::Risk::destructive,
    .annotations = R"({"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false})",
    .handler =
        [](NoteStore& store, gh::Call& call) {
            const auto id = call.arg<int64_t>("note_id");
            if (!guarded([&] { return store.forget(owner_of(call), id); }, Effect::repeatable_writes))
                throw gh::Refusal("NOTE_NOT_FOUND",
                                  "No note " + std::to_string(id) +
                                      ": nothing was deleted. recall lists the notes and their ids.",
                                  {{"tool", "recall"}, {"note_id", id}});
            return gh::Result::structured({{"id", id}, {"deleted", true}}, "Forgot note " + std::to_string(id) + ".");
        },
});

const auto& forget_all = plugin.tool({
    .name = "forget_all",
    .title = "Forget all notes",
    .description = "Deletes every note of the person you work for. Only when the person asked for it; pass "
                   "confirm: true. This cannot be undone.",
    .input_schema = R"({"type":"object","properties":{"confirm":{"const":true,
        "description":"Must be true: the person asked to delete all of their notes."}},
        "required":["confirm"],"additionalProperties":false})",
    .output_schema = R"({"type":"object","properties":{"deleted":{"type":"integer"}},"required":["deleted"]})",
    .risk = gh::Risk::destructive,
    .annotations = R"({"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false})",
    .handler =
        [](NoteStore& store, gh::Call& call) {
            const int64_t deleted =
                guarded([&] { return store.forget_all(owner_of(call)); }, Effect::repeatable_writes);
            return gh::Result::structured({{"deleted", deleted}},
                                          "Forgot all notes (" + std::to_string(deleted) + ").");
        },
});

// stemming: none | {latin: english, cyrillic: russian}; a script left out
// keeps its default, "none" leaves its words unstemmed.
memory::Stemming read_stemming(const gh::Json& value) {
    constexpr const char* kWhere = "domains.memory.settings.stemming";
    if (value.is_string() && value.get<std::string>() == "none") return {"", ""};
    if (!value.is_object())
        throw std::runtime_error(std::string(kWhere) +
                                 " must be none or a mapping {latin: <language|none>, cyrillic: <language|none>}");
    memory::Stemming stemming;
    for (const auto& [script, language] : value.items()) {
        if (script != "latin" && script != "cyrillic")
            throw std::runtime_error(std::string(kWhere) + "." + script +
                                     ": unknown script (allowed: latin, cyrillic)");
        const std::string name = language.is_string() ? language.get<std::string>() : "";
        if (name != "none" && !memory::stemmer_language_known(script, name))
            throw std::runtime_error(std::string(kWhere) + "." + script + ": \"" + name +
                                     "\" is not a Snowball language for " + script +
                                     " words (for example english, german, french, russian; or none)");
        (script == "latin" ? stemming.latin : stemming.cyrillic) = name == "none" ? "" : name;
    }
    return stemming;
}

// `gatehouse notes check [--config FILE]`: reads the whole notes database and
// says whether the index, the counts and the file agree.
static auto& notes_command = plugin.command({
    .name = "notes",
    .usage = "check",
    .summary = "Check the memory family's notes database: the file, the word index and the owners' counts.",
    .run =
        [](NoteStore& store, gh::Command& command) {
            if (command.args().size() != 1 || command.args()[0] != "check") {
                command.err("gatehouse: usage: gatehouse notes check [--config FILE]\n");
                return 2;
            }
            const auto report = store.check();
            for (const auto& problem : report.problems)
                command.err("gatehouse: " + problem + "\n");
            command.out((report.problems.empty() ? "ok: " : "damaged: ") + std::to_string(report.notes) + " notes of " +
                        std::to_string(report.owners) + " owners\n");
            return report.problems.empty() ? 0 : 1;
        },
});

memory::StoreSettings read_settings(const gh::Json& config) {
    const std::filesystem::path data_dir = config.value("data_dir", std::string());
    const gh::Json settings = config.value("settings", gh::Json::object());
    if (!settings.is_object()) throw std::runtime_error("domains.memory.settings must be a mapping");
    for (const auto& [key, value] : settings.items())
        if (key != "database" && key != "max_text_bytes" && key != "synchronous" && key != "stemming")
            throw std::runtime_error("unknown setting domains.memory.settings." + key +
                                     " (allowed: database, max_text_bytes, synchronous, stemming)");
    memory::StoreSettings out;
    if (auto it = settings.find("max_text_bytes"); it != settings.end()) {
        if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 16 * 1024 * 1024)
            throw std::runtime_error("domains.memory.settings.max_text_bytes must be an integer from 1 to 16777216");
        out.limits.max_text_bytes = it->get<std::size_t>();
    }
    if (auto it = settings.find("stemming"); it != settings.end()) out.stemming = read_stemming(*it);
    if (out.stemming.enabled())
        if (auto problem = memory::libstemmer_problem()) throw std::runtime_error(*problem);
    if (auto it = settings.find("synchronous"); it != settings.end()) {
        const std::string mode = it->is_string() ? it->get<std::string>() : "";
        if (mode == "full")
            out.synchronous = memory::Synchronous::full;
        else if (mode != "normal")
            throw std::runtime_error("domains.memory.settings.synchronous must be normal or full");
    }

    std::filesystem::path database = data_dir / "memory.db";
    if (auto it = settings.find("database"); it != settings.end()) {
        if (!it->is_string() || it->get<std::string>().empty())
            throw std::runtime_error("domains.memory.settings.database must be a file path or a postgresql:// URL");
        if (memory::is_postgres_url(it->get<std::string>())) {
            if (settings.contains("synchronous"))
                throw std::runtime_error("domains.memory.settings.synchronous is for a SQLite file; PostgreSQL "
                                         "always commits synchronously");
            out.database_path = it->get<std::string>();
            return out;
        }
        database = it->get<std::string>();
        if (database.is_relative()) database = data_dir / database;
    }
    if (database.has_parent_path()) std::filesystem::create_directories(database.parent_path());
    out.database_path = database.string();
    return out;
}

} // namespace

static const bool initialised = [] {
    plugin.on_init([](const gh::Json& config) {
        auto settings = read_settings(config);
        const std::string where = memory::is_postgres_url(settings.database_path)
                                      ? memory::redacted_postgres_url(settings.database_path)
                                      : settings.database_path;
        auto store = std::make_unique<NoteStore>(std::move(settings));
        plugin.log(gh::LogLevel::info, std::string("memory: notes in ") + store->backend_name() + " " + where);
        return store;
    });
    // The gate asks at session_connect: {"store", "user", "principal"}. The
    // owner key is the same as a call's inside that session (principal and
    // store), so the list and recall always talk about the same notes. Every
    // critical note is listed, read in an earlier session or not: a new
    // session is a new conversation that has not seen them.
    plugin.on_critical_items([](NoteStore& store, const gh::Json& asked) {
        Owner owner;
        owner.principal = asked.value("principal", std::string());
        owner.store = asked.value("store", std::string());
        gh::Json items = gh::Json::array();
        if (owner.principal.empty()) return items;
        for (const auto& n : store.critical_notes(owner))
            items.push_back({{"id", std::to_string(n.id)}, {"title", critical_title(n.text)}});
        return items;
    });
    return true;
}();

GH_EXPORT_PLUGIN(plugin)
