#include "session/store_source.hpp"

#include "session/bounded_file.hpp"

#include <nlohmann/json.hpp>

namespace gatehouse::session {

namespace {

// Four lines of JSON need far less; the bound is what a file at the path may
// cost each call that reads it.
constexpr std::size_t kMaxProgramStateBytes = 64 * 1024;

} // namespace

StoreSource::StoreSource(const config::SessionSettings& settings)
    : pinned_store_(settings.pinned_store), pinned_user_(settings.pinned_user),
      program_state_file_(settings.program_state_file) {}

StoreView StoreSource::current() const {
    if (pinned()) return {true, true, pinned_store_, pinned_user_};
    std::optional<BoundedFile> file;
    try {
        file = read_bounded_file(program_state_file_, kMaxProgramStateBytes);
    } catch (const BoundedFileRefused& e) {
        throw StoreSourceError("the program state file " + program_state_file_.string() + " " + e.what());
    }
    // No file at all: the program has never run here, which is an answer.
    if (!file) return {false, false, {}, {}};
    nlohmann::json state;
    try {
        state = nlohmann::json::parse(file->text);
    } catch (const nlohmann::json::exception& e) {
        throw StoreSourceError("the program state file " + program_state_file_.string() + " is not JSON: " + e.what());
    }
    if (!state.is_object() || !state.contains("running") || !state["running"].is_boolean())
        throw StoreSourceError("the program state file " + program_state_file_.string() +
                               " has no boolean \"running\"");
    StoreView view;
    view.program_running = state["running"].get<bool>();
    if (!view.program_running) return view;
    const auto text_field = [&](const char* key) {
        auto it = state.find(key);
        if (it == state.end() || it->is_null()) return std::string();
        if (!it->is_string())
            throw StoreSourceError("the program state file " + program_state_file_.string() + " has a non-string \"" +
                                   key + "\"");
        return it->get<std::string>();
    };
    view.store = text_field("store");
    view.user = text_field("user");
    if (view.store.empty() || view.user.empty()) view.store.clear(), view.user.clear();
    return view;
}

} // namespace gatehouse::session
