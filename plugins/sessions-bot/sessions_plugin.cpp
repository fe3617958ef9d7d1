// Family "sessions": a third-party service asks a person to log in, link an
// account, open billing, pay for a product or open support; the person
// confirms in the bot; the service polls and exchanges the approval code.
//   create_session                  write  a pending session and the link the person confirms it at
//   exchange_session_approval_code  write  the approval code, once, for access and refresh tokens
//   get_session_status              read   pending, approved (with the code), denied or expired
//   get_active_bot                  read   the bot a person chose with `gatehouse bot use SLUG`
// The verb `gatehouse bot [use SLUG]` (ABI 1.6) lists the bots and records
// that choice in the family's data folder.
// The page "confirm" (served by the host at the link) stands in for the bot
// chat: it shows what is asked and records Approve or Deny, once: creating a
// session puts a one-use decision ticket, and only the press that takes it
// (state_take) decides, whichever instance serves it.
//
// Every session lives in the host's state backend (ABI 1.3), so any instance
// sharing it answers; every read is owner-checked: a session of another
// principal behaves as unknown. Approval codes are single-use across every
// instance: approving puts a ticket for the code, and only the exchange that
// takes it (state_take, ABI 1.4) mints tokens. Tokens are random and kept
// only as SHA-256 hashes, and nothing secret is ever logged. The approval
// code is kept in clear from approval until its exchange or the session's
// expiry, because get_session_status hands it to the agent (bot_session.hpp).
// What one principal can make the backend keep is bounded: metadata of at
// most 4096 bytes, at most max_live_sessions sessions pending or approved and
// not exchanged, and an undecided session kept only a short grace past its
// expiry.
// A call naming a bot that is not the active one is refused with
// ACTIVE_BOT_CHANGED before anything is read or written. Every refusal is a
// gh::Refusal: a stable code, the sentence and what the next step needs.
// create_session, exchange_session_approval_code and get_session_status are
// published exactly as the platform's registry defines them (below).
//
// Settings (domains.sessions.settings): bots ([{slug, name, user_seq_id}]),
// active_bot (slug; default the first), expiry_s (1..86400, default 600),
// retention_s (how long a decided session still answers; default 86400),
// max_live_sessions (1..1000, default 32: per principal, pending or approved
// and not exchanged), access_token_ttl_s (default 3600), refresh_token_ttl_s
// (default 2592000).
#include "bot_directory.hpp"
#include "bot_session.hpp"
#include "secret.hpp"

#include <gatehouse/plugin.hpp>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace {

using sessions_bot::BotDirectory;
using sessions_bot::BotSession;
using sessions_bot::BotSessionStore;
using sessions_bot::Json;

struct Settings {
    std::chrono::milliseconds expiry{600 * 1000};
    std::chrono::milliseconds retention{86400 * 1000};
    std::size_t max_live_sessions = 32;
    std::uint64_t access_token_ttl_s = 3600;
    std::uint64_t refresh_token_ttl_s = 30 * 86400;
};

// The plugin's state, made by init from domains.sessions.settings: what the
// operator configured, and the bots with the person's choice among them.
struct Family {
    Settings settings;
    BotDirectory bots;
};

static gh::Plugin<Family> plugin{{.name = "gatehouse-sessions",
                                  .version = "1.0.0",
                                  .family = "sessions",
                                  // Serialized within an instance; single use across
                                  // instances rests on taking the code's ticket.
                                  .reentrant = false}};

// The most metadata (serialized JSON) one session keeps; the other stored
// arguments are bounded by their published maxLength.
constexpr std::size_t kMaxMetadataBytes = 4096;

const char* type_label(std::string_view type) {
    if (type == "LOGIN") return "Log in";
    if (type == "LINK") return "Link an account";
    if (type == "OPEN_BILLING") return "Open billing";
    if (type == "PAY_PRODUCT") return "Pay for a product";
    return "Open support";
}

// A refusal the agent can act on, shaped like the gate's: a stable code, the
// sentence, and what the next step needs.
[[noreturn]] void refuse(std::string_view code, const std::string& message, Json next = Json::object()) {
    throw gh::Refusal(std::string(code), message, std::move(next));
}

std::string iso_time(std::int64_t ms) {
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

std::string owner_of(const Json& context) {
    // The host's owner key, not the subject: a token whose `sub` is the local
    // user's name is another caller.
    auto owner = context.value(Json::json_pointer("/principal/owner"), std::string());
    if (owner.empty())
        refuse("NO_PRINCIPAL",
               "The host did not say who is calling, so no session can be kept for you. Tell the "
               "operator: the sessions family needs a principal.",
               {{"action", "tell the operator"}});
    return owner;
}

const sessions_bot::Bot& active_bot(const Family& family) {
    const sessions_bot::Bot* bot = family.bots.active();
    if (!bot)
        refuse("NO_ACTIVE_BOT",
               "No bot is active on this server (none is configured under "
               "domains.sessions.settings.bots, or the chosen one was removed). Tell the person: "
               "`gatehouse bot use SLUG` chooses one.",
               {{"action", "tell the person"}});
    return *bot;
}

// Refuses before anything runs when the caller names a bot that is not the
// active one: the person switched bots, and what the caller knows is stale.
const sessions_bot::Bot& check_bot(const Family& family, const gh::Call& call) {
    const auto& active = active_bot(family);
    const auto named = call.arg_or<std::string>("bot", "");
    if (!named.empty() && named != active.slug)
        refuse("ACTIVE_BOT_CHANGED",
               "The active bot is now '" + active.slug + "' (" + active.name + "), not '" + named +
                   "'; nothing was done. Call get_active_bot, then repeat the call naming the active bot.",
               {{"tool", "get_active_bot"}, {"active_bot", active.slug}, {"named_bot", named}});
    return active;
}

[[noreturn]] void code_used(const std::string& session_id) {
    refuse("APPROVAL_CODE_USED",
           "That approval code was already exchanged; each code works once. Create a new session to get new tokens.",
           {{"tool", "create_session"}, {"session_id", session_id}});
}

[[noreturn]] void bot_removed(const BotSession& session) {
    refuse("BOT_REMOVED",
           "The bot '" + session.bot +
               "' this session was made for is no longer configured on this server, so it gives no tokens; the "
               "code was not spent. Create a new session with the active bot.",
           {{"tool", "create_session"}, {"session_id", session.session_id}, {"bot", session.bot}});
}

[[noreturn]] void session_expired(const std::string& session_id) {
    refuse("SESSION_EXPIRED", "The session expired before its code was exchanged. Create a new session.",
           {{"tool", "create_session"}, {"session_id", session_id}});
}

bool safe_redirect(std::string_view url) {
    if (url.size() > 2048) return false;
    std::string_view rest;
    if (url.rfind("https://", 0) == 0)
        rest = url.substr(8);
    else if (url.rfind("http://", 0) == 0)
        rest = url.substr(7);
    else
        return false;
    for (unsigned char c : url)
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '`') return false;
    const auto authority = rest.substr(0, rest.find_first_of("/?#"));
    return !authority.empty() && authority.find('@') == std::string_view::npos && authority[0] != ':';
}

// Only an explicit yes counts: "accept" with a boolean `confirm` that is
// true. The answer comes from the client, so anything else (a missing or
// non-boolean confirm, an action that is no string) is a no, never a fault.
bool said_yes(const Json& answer) {
    const auto action = answer.find("action");
    const auto content = answer.find("content");
    if (action == answer.end() || *action != "accept" || content == answer.end() || !content->is_object()) return false;
    const auto confirm = content->find("confirm");
    return confirm != content->end() && confirm->is_boolean() && confirm->get<bool>();
}

// PAY_PRODUCT and OPEN_BILLING move money: risk never replaces consent. The
// person confirms in a form the client shows (elicitation, a multi
// round-trip request); a client that cannot show one is refused, and so is
// anything but an explicit yes. Nothing is created before the yes: the
// handler runs again from the top on the round that brings the answer.
void require_money_consent(gh::Call& call, const std::string& type, const std::string& bot_name) {
    if (!call.client_supports("elicitation"))
        refuse("CONSENT_REQUIRED",
               "A " + type +
                   " session moves money, so the person must confirm it first, and this client cannot show a "
                   "consent prompt (no elicitation). Nothing was created. Ask the person to start it from a client "
                   "that supports elicitation.",
               {{"action", "ask the person"}, {"type", type}, {"needs", "elicitation"}});
    std::string what = "Start a " + type + " session in " + bot_name;
    if (auto product = call.arguments().find("product_seq_id"); product != call.arguments().end())
        what += " for product " + product->dump();
    what += "? It moves money; you will confirm it in the bot as well.";
    // An answer counts only on a round that brings back what the asking round
    // kept: the host seals that state to this caller, this tool and these
    // arguments. The form's key carries a random value kept in it, so
    // inputResponses sent unasked (without the requestState) never fit the
    // key, and the person is asked.
    std::string asked = call.state();
    if (asked.empty()) asked = sessions_bot::random_hex(16);
    call.keep_state(asked);
    const gh::Json answer = call.need(
        "money_consent_" + asked,
        gh::input::elicit_form(
            what, {{"type", "object"},
                   {"properties",
                    {{"confirm",
                      {{"type", "boolean"}, {"title", "Yes, start this " + type + " session"}, {"default", false}}}}},
                   {"required", {"confirm"}}}));
    if (!said_yes(answer))
        refuse("CONSENT_DECLINED", "The person did not confirm the " + type + " session, so nothing was created.",
               {{"type", type}});
}

std::string schema_header() {
    return R"("$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,)";
}

// The published definitions of the platform's registry (its "MCP: sessions"
// page, platform 1.0.19) are the contract agents are written against: names,
// titles, schemas and property descriptions as published, word for word. A
// tool's description may add guidance after the published sentence.
const std::string kBotProperty =
    R"("bot":{"description":"Optional slug of the bot you expect to act on (get_active_bot). If the active bot differs, the call is refused with ACTIVE_BOT_CHANGED and nothing runs.","maxLength":128,"minLength":1,"type":"string"})";
// UUID versions 1-8 (RFC 9562), the nil UUID and the max UUID.
const std::string kSessionIdPattern = "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-"
                                      "[0-9a-fA-F]{12}"
                                      "|00000000-0000-0000-0000-000000000000"
                                      "|ffffffff-ffff-ffff-ffff-ffffffffffff)$";

// What the hints say is what the tools do: nothing here reaches beyond this
// server's own state, so no tool is open-world.
const char* const kCreates =
    R"({"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false})";
const char* const kReads = R"({"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false})";

static auto& create_session = plugin.tool({
    .name = "create_session",
    .title = "Create Session",
    .description = "Create a third-party login / link / pay session that the user confirms in-bot. Answers the "
                   "session_id and the confirmation_url to hand to the person; poll get_session_status until it is "
                   "approved, then exchange the approval code. PAY_PRODUCT and OPEN_BILLING need the person's "
                   "consent first.",
    .input_schema = "{" + schema_header() + R"("properties":{)" + kBotProperty + R"(,
        "external_user_id":{"description":"Value for external user id.","maxLength":255,"type":"string"},
        "login_session_id":{"description":"Value for login session id.","maxLength":255,"type":"string"},
        "metadata":{"additionalProperties":{},"description":"Value for metadata.",
                    "propertyNames":{"type":"string"},"type":"object"},
        "product_seq_id":{"description":"Value for product seq id.","exclusiveMinimum":0,
                          "maximum":9007199254740991,"type":"integer"},
        "redirect_url":{"description":"Value for redirect url.","format":"uri","maxLength":2048,"type":"string"},
        "type":{"description":"Value for type.","enum":["LOGIN","LINK","OPEN_BILLING","PAY_PRODUCT","OPEN_SUPPORT"],
                "type":"string"}},"required":["type"]})",
    .scope = "sessions",
    .required_scopes = {"sessions"},
    .risk = gh::Risk::write,
    .annotations = kCreates,
    .handler =
        [](Family& family, gh::Call& call) {
            const auto& bot = check_bot(family, call);
            const auto context = call.context();
            const std::string owner = owner_of(context);
            const auto type = call.arg<std::string>("type");
            const auto redirect = call.arg_or<std::string>("redirect_url", "");
            if (!redirect.empty() && !safe_redirect(redirect))
                refuse("INVALID_REDIRECT_URL",
                       "redirect_url must be an absolute http or https URL without user information or spaces; fix "
                       "it or leave it out.",
                       {{"argument", "redirect_url"}});
            if (type == "PAY_PRODUCT" && !call.arguments().contains("product_seq_id"))
                refuse("PRODUCT_REQUIRED", "A PAY_PRODUCT session needs product_seq_id, the product to pay for.",
                       {{"argument", "product_seq_id"}});
            if (auto metadata = call.arguments().find("metadata"); metadata != call.arguments().end()) {
                const std::size_t size = metadata->dump(-1, ' ', false, Json::error_handler_t::replace).size();
                if (size > kMaxMetadataBytes)
                    refuse("METADATA_TOO_LARGE",
                           "metadata is " + std::to_string(size) + " bytes as JSON, and a session keeps at most " +
                               std::to_string(kMaxMetadataBytes) +
                               "; nothing was created. Keep only what the person needs to decide, then call again.",
                           {{"argument", "metadata"}, {"limit_bytes", kMaxMetadataBytes}, {"size_bytes", size}});
            }
            const auto pages = context.value("pages_url", std::string());
            if (pages.empty())
                refuse("NO_CONFIRMATION_PAGE",
                       "This server serves no HTTP, so the person has nowhere to confirm the session; nothing was "
                       "created. Tell the operator to serve HTTP (gatehouse serve --transport http).",
                       {{"action", "tell the operator"}});
            // Counted before the person is asked for consent, and again on the
            // round that brings the answer (the handler runs from the top).
            const BotSessionStore store(call, family.settings.retention);
            auto live = store.live_sessions(owner);
            if (live.size() >= family.settings.max_live_sessions) {
                std::int64_t first_end = live.front().expires_ms;
                for (const auto& entry : live)
                    first_end = std::min(first_end, entry.expires_ms);
                refuse("TOO_MANY_SESSIONS",
                       "You have " + std::to_string(live.size()) +
                           " sessions pending or approved and not yet exchanged, the most this server keeps for one "
                           "caller; nothing was created. Exchange the approval codes of approved ones, or wait until "
                           "one expires (the first at " +
                           iso_time(first_end) + "), then call again.",
                       {{"limit", family.settings.max_live_sessions}, {"retry_at", iso_time(first_end)}});
            }
            if (type == "PAY_PRODUCT" || type == "OPEN_BILLING") require_money_consent(call, type, bot.name);

            BotSession session;
            session.session_id = sessions_bot::random_uuid();
            session.owner = owner;
            session.type = type;
            session.bot = bot.slug;
            session.bot_name = bot.name;
            session.requested_by = context.value(Json::json_pointer("/principal/subject"), std::string());
            for (const char* key : {"external_user_id", "login_session_id", "metadata", "product_seq_id"})
                if (call.arguments().contains(key)) session.details[key] = call.arguments()[key];
            session.redirect_url = redirect;
            session.created_ms = sessions_bot::now_ms();
            session.expires_ms = session.created_ms + family.settings.expiry.count();
            session.decided_once = true;
            const std::string page_token = sessions_bot::random_hex(32);
            store.save(session);
            store.issue_decision(session);
            store.link("page", sessions_bot::sha256_hex(page_token), session);
            live.push_back({session.session_id, session.expires_ms});
            store.record_live(owner, live);
            return gh::Result::structured({{"session_id", session.session_id},
                                           {"state", "pending"},
                                           {"type", type},
                                           {"bot", bot.slug},
                                           {"confirmation_url", pages + "/confirm/" + page_token},
                                           {"expires_at", iso_time(session.expires_ms)}});
        },
});

static auto& get_session_status = plugin.tool({
    .name = "get_session_status",
    .title = "Get Session Status",
    .description = "Poll session state (pending / approved / denied / expired). Approved comes with the session's "
                   "single-use approval_code and the bot user; pending lasts until the person decides.",
    .input_schema = "{" + schema_header() +
                    R"("properties":{"session_id":{"description":"Value for session id.","format":"uuid","pattern":")" +
                    kSessionIdPattern + R"(","type":"string"}},"required":["session_id"]})",
    .output_schema = "{" + schema_header() + R"("properties":{
        "approval_code":{"type":"string"},
        "session_id":{"type":"string"},
        "state":{"type":"string"},
        "user":{"anyOf":[{"additionalProperties":false,"properties":{"seq_id":{"exclusiveMinimum":0,
                "maximum":2147483647,"type":"integer"}},"required":["seq_id"],"type":"object"},{"type":"null"}]}},
        "required":["session_id","state","user"]})",
    .scope = "sessions",
    .required_scopes = {"sessions"},
    .risk = gh::Risk::read,
    .annotations = kReads,
    .handler =
        [](Family& family, gh::Call& call) {
            const std::string owner = owner_of(call.context());
            auto id = call.arg<std::string>("session_id");
            for (auto& c : id)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            const BotSessionStore store(call, family.settings.retention);
            auto session = store.load(id);
            if (!session || session->owner != owner)
                refuse("SESSION_UNKNOWN",
                       "There is no session " + id +
                           " of yours (never created, created by someone else, or ended long ago). Create a new one "
                           "with create_session.",
                       {{"tool", "create_session"}, {"session_id", id}});
            const std::string state = session->visible_state(sessions_bot::now_ms());
            Json answer = {{"session_id", session->session_id}, {"state", state}, {"user", nullptr}};
            if (session->user_seq_id && state == "approved") answer["user"] = {{"seq_id", *session->user_seq_id}};
            if (state == "approved" && !session->exchanged)
                if (auto code = store.approval_code(*session)) answer["approval_code"] = *code;
            return gh::Result::structured(answer);
        },
});

static auto& exchange_code = plugin.tool({
    .name = "exchange_session_approval_code",
    .title = "Exchange Session Approval Code",
    .description = "Exchange an approval_code for access + refresh tokens. The session must be approved and "
                   "unexpired; each code works once.",
    .input_schema = "{" + schema_header() +
                    R"("properties":{"approval_code":{"description":"Value for approval code.","minLength":1,
                        "type":"string"},)" +
                    kBotProperty + R"(},"required":["approval_code"]})",
    .scope = "sessions",
    .required_scopes = {"sessions"},
    .risk = gh::Risk::write,
    // Mints tokens and spends the code: a second call with the same code is
    // refused, so it is not idempotent; nothing existing is destroyed.
    .annotations = kCreates,
    .handler =
        [](Family& family, gh::Call& call) {
            check_bot(family, call);
            const std::string owner = owner_of(call.context());
            const std::string code_hash = sessions_bot::sha256_hex(call.arg<std::string>("approval_code"));
            const BotSessionStore store(call, family.settings.retention);
            std::optional<BotSession> session;
            if (auto id = store.linked("code", code_hash)) session = store.load(*id);
            if (!session || session->owner != owner || session->approval_code_hash != code_hash)
                refuse("APPROVAL_CODE_UNKNOWN",
                       "That approval code is not one of yours. Take the code from get_session_status of an approved "
                       "session.",
                       {{"tool", "get_session_status"}});
            if (session->exchanged) code_used(session->session_id);
            const std::string state = session->visible_state(sessions_bot::now_ms());
            if (state == "expired") session_expired(session->session_id);
            if (state != "approved")
                refuse(state == "denied" ? "SESSION_DENIED" : "SESSION_NOT_APPROVED",
                       "The session is " + state + ", so it has no tokens to give.",
                       {{"session_id", session->session_id},
                        {"state", state},
                        {"tool", state == "denied" ? "create_session" : "get_session_status"}});
            // The bot user the tokens name must still be one this server has:
            // refused before the code is spent, so it works again should the
            // operator put the bot back before the session expires.
            if (!family.bots.find(session->bot)) bot_removed(*session);
            // Every check above passed on what this instance read; another
            // exchange (here or on another instance) may have passed them at
            // the same moment. Only the one that takes the ticket goes on.
            if (!store.take_ticket(code_hash, session->session_id)) {
                const auto now = store.load(session->session_id);
                if (now && !now->exchanged && now->visible_state(sessions_bot::now_ms()) == "expired")
                    session_expired(session->session_id);
                code_used(session->session_id);
            }

            const std::string access = "gha_" + sessions_bot::random_hex(32);
            const std::string refresh = "ghr_" + sessions_bot::random_hex(32);
            const Json grant = {{"session_id", session->session_id},
                                {"owner", owner},
                                {"bot", session->bot},
                                {"user_seq_id", *session->user_seq_id}};
            Json access_grant = grant, refresh_grant = grant;
            access_grant["kind"] = "access";
            refresh_grant["kind"] = "refresh";
            store.save_token(sessions_bot::sha256_hex(access), access_grant,
                             std::chrono::seconds(family.settings.access_token_ttl_s));
            store.save_token(sessions_bot::sha256_hex(refresh), refresh_grant,
                             std::chrono::seconds(family.settings.refresh_token_ttl_s));
            session->exchanged = true;
            session->legacy_approval_code.clear();
            store.save(*session);
            store.forget_approval_code(*session);
            return gh::Result::structured({{"access_token", access},
                                           {"refresh_token", refresh},
                                           {"token_type", "Bearer"},
                                           {"expires_in", family.settings.access_token_ttl_s},
                                           {"refresh_expires_in", family.settings.refresh_token_ttl_s},
                                           {"session_id", session->session_id},
                                           {"user", {{"seq_id", *session->user_seq_id}}}},
                                          "Tokens issued for session " + session->session_id +
                                              " (kept only as hashes on this server).");
        },
});

static auto& get_active_bot = plugin.tool({
    .name = "get_active_bot",
    .title = "Get the active bot",
    .description = "Answers the slug and name of the bot people confirm sessions in now. Only a person changes "
                   "it (gatehouse bot use SLUG).",
    .input_schema = "{" + schema_header() + R"("properties":{}})",
    .output_schema = "{" + schema_header() + R"("properties":{"slug":{"type":"string"},"name":{"type":"string"}},
        "required":["slug","name"]})",
    .scope = "sessions",
    .required_scopes = {"sessions"},
    .risk = gh::Risk::read,
    .annotations = kReads,
    .handler =
        [](Family& family, gh::Call&) {
            const auto& bot = active_bot(family);
            return gh::Result::structured({{"slug", bot.slug}, {"name", bot.name}});
        },
});

// `gatehouse bot [use SLUG] [--config FILE]`: a person lists the configured
// bots (the active one marked) or chooses the active one. The choice goes to
// the family's own data folder, where every call reads it, so a running host
// follows at once.
static auto& bot_command = plugin.command({
    .name = "bot",
    .usage = "[use SLUG]",
    .summary = "List the sessions family's bots, or choose the active one (a running host follows at once; calls "
               "naming another bot get ACTIVE_BOT_CHANGED).",
    .run =
        [](Family& family, gh::Command& command) {
            const auto& args = command.args();
            if (args.empty()) {
                const sessions_bot::Bot* active = family.bots.active();
                for (const auto& bot : family.bots.bots())
                    command.out((active && active->slug == bot.slug ? "* " : "  ") + bot.slug + "  " + bot.name + "\n");
                if (family.bots.bots().empty()) command.out("no bots configured (domains.sessions.settings.bots)\n");
                return 0;
            }
            if (args.size() != 2 || args[0] != "use") {
                command.err("gatehouse: usage: gatehouse bot use SLUG [--config FILE]\n");
                return 2;
            }
            const std::string& slug = args[1];
            if (!family.bots.find(slug)) {
                command.err("gatehouse: no bot '" + slug + "' under domains.sessions.settings.bots in " +
                            command.config_file() + "; `gatehouse bot` lists them\n");
                return 1;
            }
            std::string error;
            if (!family.bots.choose(slug, error)) {
                command.err("gatehouse: " + error + "\n");
                return 1;
            }
            command.out("active bot: " + slug + "\n");
            return 0;
        },
});

std::string no_bot_to_approve(const BotSession& session) {
    return "The bot " + session.bot_name + " (" + session.bot +
           ") this request was made for is no longer configured on this server, so it cannot be approved; nothing "
           "was changed. Ask the service that sent you here to start a new request.";
}

// The session a page token points at, or NotFound (a 404 page).
BotSession session_of_page(const gh::Call& call, const BotSessionStore& store) {
    const auto token = call.arg<std::string>("token");
    auto id = store.linked("page", sessions_bot::sha256_hex(token));
    if (!id) throw gh::NotFound("no such page");
    auto session = store.load(*id);
    if (!session) throw gh::NotFound("no such session");
    return *session;
}

static auto& confirm_page = plugin.page({
    .name = "confirm",
    .show =
        [](Family& family, gh::Call& call) {
            const BotSessionStore store(call, family.settings.retention);
            const BotSession session = session_of_page(call, store);
            Json fields = Json::array();
            fields.push_back({{"label", "Request"}, {"value", type_label(session.type)}});
            fields.push_back({{"label", "Requesting service"}, {"value", session.requested_by}});
            fields.push_back({{"label", "Bot"}, {"value", session.bot_name + " (" + session.bot + ")"}});
            if (session.details.contains("product_seq_id"))
                fields.push_back({{"label", "Product"}, {"value", session.details["product_seq_id"].dump()}});
            if (session.details.contains("external_user_id"))
                fields.push_back({{"label", "Account at the service"},
                                  {"value", session.details["external_user_id"].get<std::string>()}});
            if (session.details.contains("login_session_id"))
                fields.push_back(
                    {{"label", "Service session"}, {"value", session.details["login_session_id"].get<std::string>()}});
            if (session.details.contains("metadata"))
                for (const auto& [key, value] : session.details["metadata"].items())
                    fields.push_back(
                        {{"label", key}, {"value", value.is_string() ? value.get<std::string>() : value.dump()}});
            fields.push_back({{"label", "Expires"}, {"value", iso_time(session.expires_ms)}});
            Json page = {{"title", std::string(type_label(session.type)) + " — confirm in " + session.bot_name},
                         {"intro", session.requested_by + " asks you to approve this request."},
                         {"fields", std::move(fields)},
                         {"actions", Json::array()}};
            const std::string state = session.visible_state(sessions_bot::now_ms());
            if (state != "pending") {
                page["notice"] = "This request is " + state + "; there is nothing left to decide.";
            } else if (!family.bots.find(session.bot)) {
                page["notice"] = no_bot_to_approve(session);
                page["actions"] = Json::array({{{"id", "deny"}, {"label", "Deny"}}});
            } else {
                page["actions"] =
                    Json::array({{{"id", "approve"}, {"label", "Approve"}}, {{"id", "deny"}, {"label", "Deny"}}});
            }
            return page;
        },
    .act =
        [](Family& family, gh::Call& call) {
            const BotSessionStore store(call, family.settings.retention);
            BotSession session = session_of_page(call, store);
            const std::string page_hash = sessions_bot::sha256_hex(call.arg<std::string>("token"));
            const std::string state = session.visible_state(sessions_bot::now_ms());
            if (state != "pending") throw gh::ToolError("This request is already " + state + ".");
            const auto action = call.arg<std::string>("action");
            if (action != "approve" && action != "deny") throw gh::ToolError("This page offers only Approve and Deny.");
            // Approving names the bot's user; a session whose bot is gone has none.
            const sessions_bot::Bot* bot = family.bots.find(session.bot);
            if (action == "approve" && !bot) throw gh::ToolError(no_bot_to_approve(session));
            // Every check above passed on what this instance read; another press
            // (here or on another instance) may have passed them at the same
            // moment. Only the one that takes the decision ticket decides.
            if (session.decided_once && !store.take_decision(session)) {
                const auto now = store.load(session.session_id);
                const std::string decided = now ? now->visible_state(sessions_bot::now_ms()) : "decided";
                throw gh::ToolError(decided == "pending" ? "This request is being decided by another press."
                                                         : "This request is already " + decided + ".");
            }
            if (action == "deny") {
                session.state = "denied";
                store.save(session);
                store.link("page", page_hash, session);
                return Json{{"message", "Denied. " + session.requested_by + " was not given access."}};
            }
            session.state = "approved";
            session.user_seq_id = bot->user_seq_id;
            const std::string code = sessions_bot::random_hex(24);
            session.approval_code_hash = sessions_bot::sha256_hex(code);
            // Ticket, link and code first: the code is readable
            // (get_session_status) once the session is saved, and must work
            // from that moment.
            store.issue_ticket(session.approval_code_hash, session);
            store.link("code", session.approval_code_hash, session);
            store.keep_approval_code(session, code);
            store.save(session);
            store.link("page", page_hash, session);
            Json done = {{"message", "Approved. You can return to " + session.requested_by + "."}};
            if (!session.redirect_url.empty()) done["redirect_url"] = session.redirect_url;
            return done;
        },
});

std::chrono::milliseconds seconds_setting(const Json& settings, const char* key, std::uint64_t fallback,
                                          std::uint64_t most) {
    if (!settings.contains(key)) return std::chrono::seconds(fallback);
    const auto& v = settings[key];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > most)
        throw std::invalid_argument(std::string("settings.") + key + " must be a whole number of seconds from 1 to " +
                                    std::to_string(most));
    return std::chrono::seconds(v.get<std::uint64_t>());
}

const bool kInit = [] {
    plugin.on_init([](const Json& config) {
        Family family;
        if (!GH_HAS(plugin.api(), state_take))
            throw std::runtime_error("the sessions family keeps its sessions in the host's state backend and spends "
                                     "each approval code once across instances (state_take); it needs a host with "
                                     "plugin ABI 1.4 or later");
        const Json settings = config.value("settings", Json::object());
        family.settings.expiry = seconds_setting(settings, "expiry_s", 600, 86400);
        family.settings.retention = seconds_setting(settings, "retention_s", 86400, 31536000);
        if (auto cap = settings.find("max_live_sessions"); cap != settings.end()) {
            if (!cap->is_number_unsigned() || cap->get<std::uint64_t>() < 1 || cap->get<std::uint64_t>() > 1000)
                throw std::invalid_argument("settings.max_live_sessions must be a whole number from 1 to 1000");
            family.settings.max_live_sessions = cap->get<std::size_t>();
        }
        family.settings.access_token_ttl_s =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                           seconds_setting(settings, "access_token_ttl_s", 3600, 31536000))
                                           .count());
        family.settings.refresh_token_ttl_s =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                           seconds_setting(settings, "refresh_token_ttl_s", 30 * 86400, 31536000))
                                           .count());
        family.bots = BotDirectory(settings, config.value("data_dir", std::string()));
        return family;
    });
    return true;
}();

} // namespace

GH_EXPORT_PLUGIN(plugin)
