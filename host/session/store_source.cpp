#include "session/store_source.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gatehouse::session {

StoreSource::StoreSource(const config::SessionSettings& settings)
    : pinned_store_(settings.pinned_store), pinned_user_(settings.pinned_user),
      program_state_file_(settings.program_state_file) {}

StoreView StoreSource::current() const {
    if (pinned()) return {true, true, pinned_store_, pinned_user_};
    std::error_code ec;
    // No file at all: the program has never run here, which is an answer.
    if (!std::filesystem::exists(program_state_file_, ec) && !ec) return {false, false, {}, {}};
    std::ifstream in(program_state_file_, std::ios::binary);
    if (!in)
        throw StoreSourceError("cannot read the program state file " + program_state_file_.string() + ": " +
                               std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json state;
    try {
        state = nlohmann::json::parse(text.str());
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
