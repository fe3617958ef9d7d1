#include "session/session_service.hpp"

#include "session/conversation_folder.hpp"
#include "session/rule_code.hpp"
#include "session/topic_name.hpp"

#include <spdlog/spdlog.h>

#include <ctime>
#include <set>

namespace gatehouse::session {

namespace {

using nlohmann::json;
namespace code = gate::refusal_code;

[[noreturn]] void refuse(std::string_view c, std::string message, json next = json::object()) {
    throw SessionRefused(gate::Refusal{std::string(c), std::move(message), std::move(next)});
}

std::string iso_time(std::int64_t ms) {
    const std::time_t t = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

StoreView current_store(const StoreSource& stores) {
    try {
        return stores.current();
    } catch (const StoreSourceError& e) {
        spdlog::error("session: {}", e.what());
        refuse(code::program_state_unreadable,
               "The host cannot tell which store the program has open (its state file is unreadable); the "
               "operator has the details in the host log.",
               {{"action", "tell the person"}});
    }
}

} // namespace

gate::Refusal not_connected_refusal() {
    return {std::string(code::not_connected),
            "No open session has this handle (never opened, expired, or the host restarted). Call session_connect "
            "with the same topic, then repeat the call with the new handle.",
            {{"tool", "session_connect"}, {"argument", "topic"}}};
}

SessionService::SessionService(const config::SessionSettings& settings, std::unique_ptr<state::StateBackend> backend,
                               const plugins::LiveRegistry& registry, bool environment_password_allowed)
    : settings_(settings),
      table_(std::move(backend), std::chrono::seconds(settings.idle_expiry_s), {}, settings.max_sessions_per_principal),
      stores_(settings), credentials_(settings, environment_password_allowed), grants_(settings), registry_(registry) {}

Session SessionService::live(const auth::Principal& principal, std::string_view handle) {
    std::shared_ptr<const Session> s;
    try {
        s = table_.find(handle, principal.owner_key());
    } catch (const state::BackendError& e) {
        spdlog::error("session: state backend: {}", e.what());
        refuse(code::state_unavailable, "The host cannot reach its session state right now; try again shortly.");
    }
    if (!s) throw SessionRefused(not_connected_refusal());
    return *s;
}

json SessionService::describe(const auth::Principal& principal, std::string_view handle) {
    const StoreView view = current_store(stores_);
    json out = {{"store", view.store.empty() ? json() : json(view.store)},
                {"user", view.user.empty() ? json() : json(view.user)},
                {"program_running", view.program_running},
                {"pinned", view.pinned}};
    try {
        out["password_available"] = credentials_.login_for(view.store, view.user).has_value();
    } catch (const CredentialsRefused& e) {
        spdlog::error("session: {}", e.what());
        out["password_available"] = false;
    }
    if (!handle.empty()) {
        const Session s = live(principal, handle);
        // session_clear walks down from conversations_dir level by level, so
        // that a link at none of them is followed.
        const ConversationsPlace place = conversations_place(settings_.conversations_dir, s.principal, s.store, s.user);
        out["session"] = {{"topic", s.topic},
                          {"store", s.store},
                          {"user", s.user},
                          {"folder", s.folder},
                          {"conversations_root", place.root().string()},
                          {"conversations_dir", place.dir.string()},
                          {"conversations_levels", place.levels},
                          {"scopes", s.scopes},
                          {"unread_critical_notes", s.unread_critical()},
                          {"expires", iso_time(table_.expires_ms(s))}};
    }
    return out;
}

json SessionService::open(const auth::Principal& principal, std::string_view topic) {
    if (auto problem = topic_problem(topic)) refuse(code::topic_invalid, *problem, {{"argument", "topic"}});
    const StoreView view = current_store(stores_);
    if (!view.program_running || view.store.empty())
        refuse(code::store_not_open,
               view.program_running ? "The program has no store open; ask the person to open one, then connect again."
                                    : "The program is not running; ask the person to start it and open a store, then "
                                      "connect again.",
               {{"tool", "session_connect"}});
    try {
        (void)credentials_.login_for(view.store, view.user);
    } catch (const CredentialsRefused& e) {
        spdlog::error("session: {}", e.what());
        refuse(code::credentials_refused,
               "The host refuses to use the store credentials as they are kept; the operator has the details in the "
               "host log.",
               {{"action", "tell the person"}});
    }
    SessionDraft draft;
    draft.principal = principal.owner_key();
    draft.store = view.store;
    draft.user = view.user;
    draft.topic = std::string(topic);
    try {
        draft.scopes = grants_.scopes(view.store, view.user);
    } catch (const GrantsUnavailable& e) {
        spdlog::error("session: {}", e.what());
        refuse(code::grants_unreadable,
               "The host cannot read the grants of this store; the operator has the details in the host log.",
               {{"action", "tell the person"}});
    }
    draft.critical = critical_items(view.store, view.user, principal);
    try {
        draft.folder = open_conversation_folder(
                           conversations_place(settings_.conversations_dir, draft.principal, view.store, view.user),
                           draft.topic, settings_.max_topics)
                           .string();
    } catch (const ConversationFoldersFull& e) {
        refuse(code::too_many_topics,
               "You already keep " + std::string(e.what()) +
                   " as this user in this store: reuse a topic, or delete one's folder with session_clear, then "
                   "connect again.",
               {{"action", "reuse a topic or session_clear"}, {"argument", "topic"}});
    } catch (const ConversationFolderUnsafe& e) {
        spdlog::error("session: {}", e.what());
        refuse(code::conversation_folder_unsafe,
               "The conversation folder of this topic cannot be used safely; choose another topic or ask the "
               "operator to look at the host log.",
               {{"argument", "topic"}});
    }
    Session s;
    try {
        s = table_.open(std::move(draft));
    } catch (const state::BackendError& e) {
        spdlog::error("session: state backend: {}", e.what());
        refuse(code::state_unavailable, "The host cannot reach its session state right now; try again shortly.");
    }
    spdlog::info("session opened: principal '{}', store '{}', user '{}', topic '{}'", s.principal, s.store, s.user,
                 s.topic);
    json critical = json::array();
    for (const auto& c : s.critical)
        critical.push_back({{"family", c.family}, {"id", c.id}, {"title", c.title}});
    return {{"session", s.handle},
            {"store", s.store},
            {"user", s.user},
            {"scopes", s.scopes},
            {"unread_critical_notes", s.unread_critical()},
            {"critical_notes", critical},
            {"folder", s.folder},
            {"expires", iso_time(table_.expires_ms(s))},
            {"idle_expiry_s", settings_.idle_expiry_s},
            {"rules", settings_.rules}};
}

json SessionService::accept_rules(const auth::Principal& principal, std::string_view handle,
                                  std::string_view code_text) {
    const Session s = live(principal, handle);
    const auto registry = registry_.current();
    for (const plugins::Tool* tool : registry->ordered()) {
        if (tool->rules.empty() || tool->gate_exempt) continue;
        const std::string key = accepted_rules_key(tool->name, tool->rules);
        if (!same_code(rule_code(s.nonce, key), code_text)) continue;
        std::optional<Session> recorded;
        try {
            recorded = table_.update(handle, principal.owner_key(), [&](Session& x) {
                if (!x.accepted(key)) x.accepted_rules.push_back(key);
            });
        } catch (const state::BackendError& e) {
            spdlog::error("session: state backend: {}", e.what());
            refuse(code::state_unavailable, "The host cannot reach its session state right now; try again shortly.");
        }
        // The session ended or was replaced since it was read: nothing was recorded.
        if (!recorded) throw SessionRefused(not_connected_refusal());
        return {{"accepted", tool->name}};
    }
    refuse(code::rules_code_invalid,
           "This code accepts no rules of this session (a code from another session never fits). Call the tool "
           "again to get its rules and a fresh code.");
}

json SessionService::critical_read(const auth::Principal& principal, std::string_view handle, std::string_view family,
                                   std::string_view item_ids) {
    std::set<std::string> ids;
    try {
        for (const auto& id : json::parse(item_ids))
            ids.insert(id.get<std::string>());
    } catch (const std::exception&) {
        refuse(code::state_unavailable, "critical_read needs a JSON array of item ids");
    }
    std::optional<Session> s;
    try {
        s = table_.update(handle, principal.owner_key(), [&](Session& x) {
            for (auto& c : x.critical)
                if (c.family == family && ids.count(c.id)) c.read = true;
        });
    } catch (const state::BackendError& e) {
        spdlog::error("session: state backend: {}", e.what());
        refuse(code::state_unavailable, "The host cannot reach its session state right now; try again shortly.");
    }
    if (!s) throw SessionRefused(not_connected_refusal());
    return {{"unread", s->unread_critical()}};
}

std::vector<CriticalItem> SessionService::critical_items(const std::string& store, const std::string& user,
                                                         const auth::Principal& principal) {
    std::vector<CriticalItem> items;
    std::set<plugins::LoadedPlugin*> asked;
    const std::string owner = json{{"store", store}, {"user", user}, {"principal", principal.owner_key()}}.dump();
    const auto registry = registry_.current();
    for (const plugins::Tool* tool : registry->ordered()) {
        if (!tool->plugin || !asked.insert(tool->plugin).second || !tool->plugin->has_critical_items()) continue;
        std::string text;
        bool ok = tool->plugin->critical_items(owner, text);
        json list;
        if (ok) try {
                list = json::parse(text);
                ok = list.is_array();
                for (const auto& item : list)
                    if (!item.is_object() || !item.contains("id") || !item["id"].is_string() ||
                        (item.contains("title") && !item["title"].is_string()))
                        ok = false;
            } catch (const json::exception&) {
                ok = false;
            }
        if (!ok) {
            spdlog::error("session: family '{}' could not list its critical notes: {}", tool->family, text);
            refuse(code::critical_notes_unavailable,
                   "The family '" + tool->family +
                       "' could not list its critical notes, so no session can open safely; try again, or tell the "
                       "operator.");
        }
        for (const auto& item : list)
            items.push_back({tool->family, item["id"].get<std::string>(), item.value("title", std::string()), false});
    }
    return items;
}

} // namespace gatehouse::session
