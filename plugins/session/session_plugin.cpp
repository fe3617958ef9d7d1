// Family "session": opens the session every gated tool needs. All tools are
// gate-exempt (a session must open before anything can be forbidden) and
// need no scopes. The work is the host's (ABI 1.1 session services); this
// family gives it tool names, schemas and readable answers.
//   session_init          read         look around: store, user, program running; changes nothing
//   session_connect       write        open the session of a topic anew (the topic's previous handle
//                                      stops working, with what it had accepted and read); creates the
//                                      conversation folder; answers the handle and general rules
//   session_rules_accept  write        accept a tool's rules with the code its refusal carried
//   session_clear         destructive  list conversation folders; delete those the person ticks in a
//                                      form (elicitation), or without forms only those named
// The host's refusals (TOPIC_INVALID, NOT_CONNECTED, RULES_CODE_INVALID, ...)
// reach the agent as they came: code, sentence and next step. session_clear
// refuses STORE_SWITCHED itself, as the gate does for gated tools, when the
// program no longer has the session's store and user open. The hints say
// what each tool does; none reaches beyond this computer (openWorldHint false).
#include "conversation_folders.hpp"

#include <gatehouse/plugin.hpp>

#include <algorithm>

static gh::Plugin plugin{{.name = "gatehouse-session", .version = "1.0.0", .family = "session"}};

static const auto& session_init = plugin.tool({
    .name = "session_init",
    .title = "Look around",
    .description = "Tells which store the program has open, who is logged in and whether the program runs. Changes "
                   "nothing. Call session_connect next.",
    .input_schema = R"({"type":"object","properties":{},"additionalProperties":false})",
    .risk = gh::Risk::read,
    .gate_exempt = true,
    .annotations = R"({"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false})",
    .handler =
        [](gh::Call& call) {
            gh::Json d = call.session_describe();
            std::string text =
                d["program_running"].get<bool>()
                    ? (d["store"].is_string() ? "Store '" + d["store"].get<std::string>() + "' is open, user '" +
                                                    d["user"].get<std::string>() + "'."
                                              : std::string("The program runs but has no store open."))
                    : std::string("The program is not running.");
            text += " Call session_connect with a one-word topic to start working.";
            return gh::Result::structured(d, text);
        },
});

static const auto& session_connect = plugin.tool({
    .name = "session_connect",
    .title = "Open a session",
    .description = "Opens the session for a topic (one word: letters, digits, '-', '_'; 1-64 characters) anew: a new "
                   "handle, nothing remembered. Pass the returned `session` to every other tool. Reconnecting with "
                   "the same topic finds the same conversation folder.",
    .input_schema = R"({"type":"object","properties":{"topic":{"type":"string",
                        "description":"One word naming the conversation."}},"required":["topic"],
                        "additionalProperties":false})",
    .risk = gh::Risk::write,
    .gate_exempt = true,
    // Ends the topic's previous session (not an additive update) and mints a
    // new handle on every call.
    .annotations = R"({"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false})",
    .handler =
        [](gh::Call& call) {
            gh::Json s = call.session_open(call.arg<std::string>("topic"));
            std::string text = "Session open for store '" + s["store"].get<std::string>() + "', user '" +
                               s["user"].get<std::string>() + "'. Pass session \"" + s["session"].get<std::string>() +
                               "\" to every tool.";
            if (s["unread_critical_notes"].get<std::size_t>() > 0)
                text += " " + std::to_string(s["unread_critical_notes"].get<std::size_t>()) +
                        " critical note(s) must be read first.";
            if (!s["rules"].get<std::string>().empty()) text += "\nRules:\n" + s["rules"].get<std::string>();
            return gh::Result::structured(s, text);
        },
});

static const auto& session_rules_accept = plugin.tool({
    .name = "session_rules_accept",
    .title = "Accept rules",
    .description = "Accepts the rules a tool's RULES_NOT_ACCEPTED refusal showed, with the code it carried. Then "
                   "repeat the refused call.",
    .input_schema = R"({"type":"object","properties":{"session":{"type":"string"},"code":{"type":"string"}},
                        "required":["session","code"],"additionalProperties":false})",
    .risk = gh::Risk::write,
    .gate_exempt = true,
    // Records the acceptance in the session; accepting again changes nothing more.
    .annotations = R"({"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})",
    .handler =
        [](gh::Call& call) {
            gh::Json a = call.rules_accept(call.arg<std::string>("session"), call.arg<std::string>("code"));
            return gh::Result::structured(a, "Rules of '" + a["accepted"].get<std::string>() +
                                                 "' accepted for this session; repeat the call.");
        },
});

// The form in which the person picks the folders to delete: a multi-select of
// the folders there are (the ones the agent proposed already ticked) and a
// confirmation that must be ticked too.
static gh::Json clear_form(const gh::Json& listing, const std::vector<std::string>& proposed) {
    gh::Json names = gh::Json::array();
    for (const auto& folder : listing)
        names.push_back(folder["name"]);
    gh::Json preselected = gh::Json::array();
    for (const auto& name : proposed)
        if (std::find(names.begin(), names.end(), name) != names.end()) preselected.push_back(name);
    gh::Json folders = {{"type", "array"},
                        {"title", "Conversation folders to delete"},
                        {"items", {{"type", "string"}, {"enum", names}}}};
    if (!preselected.empty()) folders["default"] = preselected;
    return {
        {"type", "object"},
        {"properties",
         {{"folders", std::move(folders)},
          {"confirm", {{"type", "boolean"}, {"title", "Yes, delete the folders I ticked; this cannot be undone"}}}}},
        {"required", {"folders", "confirm"}}};
}

// The session's store and user as the agent and the person read them.
static std::string store_and_user(const gh::Json& d) {
    return "store '" + d["session"]["store"].get<std::string>() + "', user '" +
           d["session"]["user"].get<std::string>() + "'";
}

// session_clear is gate-exempt, so the gate's store binding never runs for
// it; it holds the same line itself: on a host that is not pinned, the
// program must still have the session's store open under the same user.
// Otherwise a stale handle would list and delete the folders of a store and
// user the person has left, in a form naming the store open now.
static void require_store_still_open(const gh::Json& d) {
    if (d["pinned"].get<bool>()) return;
    const bool open = d["program_running"].get<bool>() && d["store"].is_string() && d["user"].is_string();
    if (open && d["store"] == d["session"]["store"] && d["user"] == d["session"]["user"]) return;
    throw gh::Refusal("STORE_SWITCHED",
                      open ? "The program now has another store or user open than this session was opened for, so "
                             "no conversation folder was deleted; call session_connect again to work with "
                             "what is open now."
                           : "The program no longer has this session's store open, so no conversation folder was "
                             "deleted; ask the person to open it, then call session_connect again.",
                      {{"tool", "session_connect"}, {"topic", d["session"]["topic"]}});
}

// Lists, asks the person where the client can show a form, deletes, and
// lists what remains. Every folder left alone or measured only in part is
// named with the reason, in the text as in the structured answer.
static gh::Result clear(gh::Call& call, const gh::Json& d, const ConversationFolders& folders) {
    gh::Json out = gh::Json::object();
    auto names = call.arg_or("delete", std::vector<std::string>{});
    std::string text;
    const gh::Json listing = folders.list();
    if (call.client_supports("elicitation") && !listing.empty()) {
        // The person decides; what the agent named is only a suggestion.
        const gh::Json answer =
            call.need("folders_to_delete", gh::input::elicit_form("Which conversation folders of " + store_and_user(d) +
                                                                      " should be deleted?",
                                                                  clear_form(listing, names)));
        names.clear();
        // The answer comes from the client: only a ticked confirmation and names as strings count.
        const gh::Json content = gh::input::accepted(answer) ? answer["content"] : gh::Json::object();
        const bool confirmed = content.contains("confirm") && content["confirm"] == true;
        if (confirmed && content.contains("folders") && content["folders"].is_array())
            for (const auto& name : content["folders"])
                if (name.is_string()) names.push_back(name.get<std::string>());
        out["asked_person"] = true;
        if (names.empty()) text = "The person deleted nothing. ";
    }
    if (!names.empty()) {
        // The person may have switched the program while the form was open.
        if (out.contains("asked_person"))
            require_store_still_open(call.session_describe(call.arg<std::string>("session")));
        out.update(folders.remove(names));
        text = "Deleted " + std::to_string(out["deleted"].size()) + " folder(s)";
        if (!out["refused"].empty()) {
            text += ", left " + std::to_string(out["refused"].size()) + " alone (";
            std::string sep;
            for (const auto& r : out["refused"]) {
                text += sep + "'" + r["name"].get<std::string>() + "': " + r["reason"].get<std::string>();
                sep = "; ";
            }
            text += ")";
        }
        text += ". ";
    }
    out["folders"] = folders.list();
    out["open_topic"] = d["session"]["topic"];
    text += std::to_string(out["folders"].size()) + " conversation folder(s) remain.";
    for (const auto& f : out["folders"])
        if (f.contains("incomplete"))
            text += " '" + f["name"].get<std::string>() +
                    "' was measured only in part: " + f["incomplete"].get<std::string>() + ".";
    return gh::Result::structured(out, text);
}

static const auto& session_clear = plugin.tool({
    .name = "session_clear",
    .title = "Clear conversations",
    .description = "Lists your conversation folders of this store and user (name, size, last change) and deletes "
                   "some. Where the client can show the person a form, the person ticks the folders to delete and "
                   "confirms (`delete` only pre-ticks them); elsewhere only the folders named in `delete` go — name "
                   "only what the person asked to delete.",
    .input_schema = R"({"type":"object","properties":{"session":{"type":"string"},
                        "delete":{"type":"array","items":{"type":"string"},"maxItems":1000}},
                        "required":["session"],"additionalProperties":false})",
    .risk = gh::Risk::destructive,
    .gate_exempt = true,
    // Where the person picks in a form, the same arguments can delete other folders.
    .annotations = R"({"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false})",
    .handler =
        [](gh::Call& call) {
            gh::Json d = call.session_describe(call.arg<std::string>("session"));
            require_store_still_open(d);
            ConversationFolders folders(d["session"]["conversations_dir"].get<std::string>(),
                                        d["session"]["conversations_levels"].get<std::vector<std::string>>());
            try {
                return clear(call, d, folders);
            } catch (const ConversationsUnreachable& e) {
                plugin.log(gh::LogLevel::error, std::string("session_clear: ") + e.what() + " (below " +
                                                    d["session"]["conversations_dir"].get<std::string>() + ")");
                throw gh::Refusal("CONVERSATION_FOLDER_UNSAFE",
                                  "The conversation folders of this session cannot be reached safely (" +
                                      std::string(e.what()) +
                                      "), so nothing was listed or deleted. Tell the operator; the host log has "
                                      "the details.",
                                  {{"action", "tell the operator"}});
            }
        },
});

GH_EXPORT_PLUGIN(plugin)
