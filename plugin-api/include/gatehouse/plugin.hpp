// Gatehouse plugin authoring layer: header-only C++ on top of plugin.h.
//
// A family is one gh::Plugin object with its tools; GH_EXPORT_PLUGIN emits the
// single C entry symbol. No C++ type crosses the ABI: this header turns
// handlers into gh_tool_fn callbacks that catch every exception, and keeps
// all descriptor memory in static storage that lives until unload.
//
//   #include <gatehouse/plugin.hpp>
//
//   static gh::Plugin plugin{{.name = "example", .version = "1.0.0", .family = "example"}};
//
//   static auto& echo = plugin.tool({
//       .name = "echo",
//       .description = "Repeats the text it is given.",
//       .input_schema = R"({"type":"object","properties":{"text":{"type":"string"}},
//                           "required":["text"]})",
//       .risk = gh::Risk::read,
//       .handler = [](gh::Call& call) { return gh::Result::text(call.arg<std::string>("text")); },
//   });
//
//   GH_EXPORT_PLUGIN(plugin)
//
// A family that keeps something per host (a database, its settings) names it
// as the plugin's state: on_init makes it from {"data_dir", "settings"}, every
// handler gets it first, and it is destroyed at shutdown. No global is needed,
// and two hosts in one process each have their own (the Python SDK's lifespan).
//
//   struct Notes { explicit Notes(const gh::Json& config); std::string find(const std::string& q); };
//   static gh::Plugin<Notes> plugin{{.name = "notes", .version = "1.0.0", .family = "notes"}};
//   static const bool made = [] {
//       plugin.on_init([](const gh::Json& config) { return std::make_unique<Notes>(config); });
//       return true;
//   }();
//   static auto& find = plugin.tool({
//       .name = "find",
//       .handler = [](Notes& notes, gh::Call& call) { return gh::Result::text(notes.find(call.arg<std::string>("q")));
//       },
//   });
//
// Everything is declared at namespace scope, before the host loads the
// plugin: a tool declared later (in on_init, in a handler) would never be
// published, so the declaration throws std::logic_error saying so (in on_init
// the load fails with that sentence).
//
// A family may add a verb to the command line (ABI 1.6): `gatehouse greet
// World` runs it after init, and what it writes goes to stdout and stderr.
//
//   static auto& greet = plugin.command({
//       .name = "greet", .usage = "NAME", .summary = "Says hello.",
//       .run = [](gh::Command& command) {
//           if (command.args().size() != 1) { command.err("usage: gatehouse greet NAME\n"); return 2; }
//           command.out("Hello, " + command.args()[0] + "\n");
//           return 0;
//       },
//   });
//
// A handler refuses the way the gate does (ABI 1.5) by throwing gh::Refusal
// with a stable code, a sentence naming the next step and what that step
// needs: the agent gets isError, "CODE: sentence" and structuredContent
// {code, message, next}.
//
//   throw gh::Refusal("QUOTA_USED", "This month's quota is used up; try again next month.",
//                     {{"retry_after", "next month"}});
//
// Resources, resource templates and prompts (ABI 1.2) are declared the same way:
//
//   static auto& readme = plugin.resource({
//       .uri = "docs://readme", .name = "readme", .mime_type = "text/markdown",
//       .read = [](gh::Read&) { return gh::ReadResult::text("# Hello"); },
//   });
//   static auto& note = plugin.resource_template({
//       .uri_template = "notes://{id}", .name = "note",
//       .read = [](gh::Read& read) { return gh::ReadResult::text("note " + read.variable("id")); },
//   });
//   static auto& greet = plugin.prompt({
//       .name = "greet", .arguments = {{.name = "who", .required = true}},
//       .get = [](gh::Call& call) { return gh::PromptResult::text("Greet " + call.arg<std::string>("who")); },
//   });
//
// A handler that needs the person, the model or the client's roots (ABI 1.3)
// asks for it by key and reads the answer on the same line; the handler runs
// again from the top when the answer is there (a multi round-trip request:
// the host asks the client, by InputRequiredResult or by a request of its
// own, whichever the client's protocol revision uses):
//
//   .handler = [](gh::Call& call) {
//       if (!call.client_supports("elicitation")) throw gh::ToolError("Ask the person for the name, then ...");
//       const gh::Json answer = call.need("user_name", gh::input::elicit_form("What is your name?",
//           {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}, {"required", {"name"}}}));
//       if (!gh::input::accepted(answer)) return gh::Result::text("Nothing done: the person declined.");
//       return gh::Result::text("Hello, " + answer["content"]["name"].get<std::string>() + "!");
//   },
//
// Several inputs in one round: call.ask() each (it answers std::nullopt
// while an answer is missing), then call.await_inputs(). Across several
// rounds, keep what earlier rounds learnt with call.keep_state(), read it back
// with call.state(): the host seals it, so the client can neither read nor
// change it.
#pragma once

#include <gatehouse/plugin.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gh {

using Json = nlohmann::json;

// ABI 1.7: whether a tool's calls may run as tasks (docs/tasks.md). The
// handler stays the same: progress() becomes the task's status message,
// cancelled() turns true on tasks/cancel, need() makes the task wait for the
// person, and what it returns is the task's result.
enum class TaskSupport : uint32_t {
    none = GH_TASK_NONE,         // every call is a plain call
    optional = GH_TASK_OPTIONAL, // a task for clients that declared the extension
    required = GH_TASK_REQUIRED, // always a task (a job handle for clients without the extension)
};

enum class Risk : uint32_t {
    read = GH_RISK_READ,
    write = GH_RISK_WRITE,
    money = GH_RISK_MONEY,
    destructive = GH_RISK_DESTRUCTIVE,
};

enum class LogLevel : int32_t {
    debug = GH_LOG_DEBUG,
    info = GH_LOG_INFO,
    notice = GH_LOG_NOTICE,
    warning = GH_LOG_WARNING,
    error = GH_LOG_ERROR,
};

// Throw from a handler to answer with a tool error: the message reaches the
// agent as `isError: true` text, so write it as the next step to take.
class ToolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throw from a tool handler to refuse the way the gate does (ABI 1.5): the
// agent gets isError, the text "CODE: message" and structuredContent {code,
// message, next}, so a program can branch on the code. The code is
// UPPER_SNAKE (a letter first; at most 64) and keeps its meaning once
// shipped; the message names the next step; `next` (a JSON object) carries
// what that step needs. A host older than ABI 1.5 shows the text only, as a
// tool error. A Refusal is a ToolError, so code that catches tool errors
// catches it too.
class Refusal : public ToolError {
public:
    Refusal(std::string code, std::string message, nlohmann::json next = nlohmann::json::object())
        : ToolError(code + ": " + message), code_(std::move(code)), message_(std::move(message)),
          next_(std::move(next)) {}

    const std::string& code() const { return code_; }
    const std::string& message() const { return message_; }
    const nlohmann::json& next() const { return next_; }

    // What GH_STATUS_REFUSED carries in the sink.
    std::string answer() const {
        return nlohmann::json{{"code", code_}, {"message", message_}, {"next", next_}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
    }

private:
    std::string code_;
    std::string message_;
    nlohmann::json next_;
};

// Throw from a handler when the arguments are wrong in a way the inputSchema
// cannot say (a note id that does not exist, a date in the past, ...).
class InvalidArguments : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throw from a resource read when the URI fits a template but names nothing
// that exists: the client gets the protocol's resource-not-found error.
class NotFound : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
    NotFound() : std::runtime_error("not found") {}
};

// Thrown by Call::need and Call::await_inputs (never by the author): the call
// ends here with "input required", carrying every request asked this round.
class InputRequired : public std::runtime_error {
public:
    explicit InputRequired(std::string answer) : std::runtime_error("input required"), answer_(std::move(answer)) {}
    const std::string& answer() const { return answer_; }

private:
    std::string answer_;
};

// Input requests for Call::ask and Call::need (ABI 1.3): what the client is
// asked, as {"method", "params"} of the MCP request of that name.
namespace input {

using Json = nlohmann::json;

// A form for the person: `requested_schema` is a flat JSON Schema object of
// primitive properties (string, number, integer, boolean, enums). The answer
// is an ElicitResult: {"action": "accept" | "decline" | "cancel", "content"?}.
inline Json elicit_form(std::string message, Json requested_schema) {
    return {{"method", "elicitation/create"},
            {"params",
             {{"mode", "form"}, {"message", std::move(message)}, {"requestedSchema", std::move(requested_schema)}}}};
}

// A page the person opens outside the client (a login, a payment). The answer
// only says whether they went ahead; learn the outcome out of band.
inline Json elicit_url(std::string message, std::string url, std::string elicitation_id) {
    return {{"method", "elicitation/create"},
            {"params",
             {{"mode", "url"},
              {"message", std::move(message)},
              {"url", std::move(url)},
              {"elicitationId", std::move(elicitation_id)}}}};
}

// A completion from the client's model. The answer is a CreateMessageResult:
// {"role", "content": {"type": "text", "text"}, "model", "stopReason"?}.
inline Json sample(std::string prompt, int max_tokens, std::string system_prompt = {}) {
    Json params = {
        {"messages", Json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", std::move(prompt)}}}}})},
        {"maxTokens", max_tokens}};
    if (!system_prompt.empty()) params["systemPrompt"] = std::move(system_prompt);
    return {{"method", "sampling/createMessage"}, {"params", std::move(params)}};
}

// The client's roots. The answer is a ListRootsResult: {"roots": [{"uri", "name"?}]}.
inline Json list_roots() {
    return {{"method", "roots/list"}, {"params", Json::object()}};
}

// True when an elicitation's answer is the person's "accept" with content.
inline bool accepted(const Json& answer) {
    return answer.is_object() && answer.value("action", "") == "accept" && answer.contains("content") &&
           answer["content"].is_object();
}

} // namespace input

inline gh_str view(std::string_view s) {
    return gh_str{s.data(), s.size()};
}
inline std::string_view view(gh_str s) {
    return s.ptr ? std::string_view{s.ptr, s.len} : std::string_view{};
}

// What a successful handler returns: MCP content blocks and optional
// structured content (which must match the tool's outputSchema, if any).
class Result {
public:
    static Result text(std::string text) {
        Result r;
        r.content_.emplace_back(std::move(text));
        return r;
    }

    // Structured content plus its readable text; without text the JSON itself
    // is the text, as the spec recommends for clients that ignore structure.
    static Result structured(Json structured_content, std::string readable = {}) {
        Result r;
        if (readable.empty()) readable = structured_content.dump(-1, ' ', false, Json::error_handler_t::replace);
        r.content_.emplace_back(std::move(readable));
        r.structured_ = std::move(structured_content);
        return r;
    }

    Result& add(Json content_block) {
        content_.emplace_back(std::move(content_block));
        return *this;
    }

    // Written piece by piece: a result object built around the blocks would
    // copy every block first, on every call.
    std::string serialize() const {
        std::string out = R"({"content":[)";
        bool first = true;
        for (const auto& block : content_) {
            if (!first) out += ',';
            first = false;
            if (block.json)
                out += block.json->dump(-1, ' ', false, Json::error_handler_t::replace);
            else
                append_text_block(out, block.text);
        }
        out += ']';
        if (!structured_.is_null()) {
            out += R"(,"structuredContent":)";
            out += structured_.dump(-1, ' ', false, Json::error_handler_t::replace);
        }
        out += '}';
        return out;
    }

private:
    // A text block is kept as its text until it is written: most results are
    // one, and a JSON object built for it would be taken apart at once.
    struct Block {
        std::string text;
        std::optional<Json> json; // a block added as JSON (add)
        explicit Block(std::string t) : text(std::move(t)) {}
        explicit Block(Json j) : json(std::move(j)) {}
    };

    // {"text":…,"type":"text"}, the bytes nlohmann writes for it (members in
    // name order, the same escapes). Text with bytes past ASCII is left to
    // nlohmann, whose check of its UTF-8 (and replacement of what is not)
    // is the behaviour kept.
    static void append_text_block(std::string& out, const std::string& text) {
        const std::size_t start = out.size();
        out += R"({"text":")";
        for (const char ch : text) {
            const auto c = static_cast<unsigned char>(ch);
            if (c >= 0x80) {
                out.resize(start);
                out += Json{{"type", "text"}, {"text", text}}.dump(-1, ' ', false, Json::error_handler_t::replace);
                return;
            }
            switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
                    out.append(escape, sizeof escape);
                } else {
                    out += ch;
                }
            }
        }
        out += R"(","type":"text"})";
    }

    std::vector<Block> content_;
    Json structured_;
};

// What Call::store_credentials answers: the sign-in, or why not.
struct StoreCredentials {
    bool granted = false;
    std::string store, user, password; // when granted
    std::string code, message;         // when not: the host's code and its sentence for the agent

    explicit operator bool() const { return granted; }
    // "CODE: sentence", ready to be thrown as a ToolError.
    std::string refusal() const { return code + ": " + message; }
    // The host's refusal, to pass on to the agent as it came: throw it.
    Refusal refused() const { return Refusal(code, message); }
};

// One tool call as the handler sees it. Valid only during the handler.
class Call {
public:
    Call(const gh_host_api* api, gh_call* raw, Json arguments)
        : api_(api), raw_(raw), arguments_(std::move(arguments)) {}

    const Json& arguments() const { return arguments_; }

    // A required argument (the host has already checked it against the
    // inputSchema, so a missing required one cannot happen here).
    template <class T> T arg(const char* name) const { return arguments_.at(name).template get<T>(); }

    template <class T> T arg_or(const char* name, T fallback) const {
        auto it = arguments_.find(name);
        if (it == arguments_.end() || it->is_null()) return fallback;
        return it->template get<T>();
    }

    bool cancelled() const { return api_->is_cancelled(raw_) != 0; }

    void log(LogLevel level, std::string_view message) const {
        api_->log(raw_, static_cast<int32_t>(level), view(message));
    }

    void progress(double done, double total = 0, std::string_view message = {}) const {
        api_->progress(raw_, done, total, view(message));
    }

    // {"principal": {...}, "revision": ..., "tool": ..., "family": ...}, and for
    // a gated tool "session": {"store", "user", "topic", "folder", "principal"}
    // ("principal" there and "principal.owner" are the caller's owner key).
    Json context() const { return Json::parse(view(api_->call_context(raw_))); }

    // Session services of the host (ABI 1.1+). Each returns the host's JSON
    // answer; when the host refuses (unknown session, a code that does not
    // fit, ...) it throws the host's Refusal (code, sentence, next), which
    // reaches the agent as the tool's refusal unless the handler catches it.
    Json session_describe(std::string_view handle = {}) const {
        if (!GH_HAS(api_, session_describe)) throw ToolError(no_session_services());
        return host_answer([&](gh_sink* out) { return api_->session_describe(raw_, view(handle), out); });
    }
    Json session_open(std::string_view topic) const {
        if (!GH_HAS(api_, session_open)) throw ToolError(no_session_services());
        return host_answer([&](gh_sink* out) { return api_->session_open(raw_, view(topic), out); });
    }
    Json rules_accept(std::string_view handle, std::string_view code) const {
        if (!GH_HAS(api_, rules_accept)) throw ToolError(no_session_services());
        return host_answer([&](gh_sink* out) { return api_->rules_accept(raw_, view(handle), view(code), out); });
    }
    // Reports that the agent has now been shown these critical items.
    Json critical_read(const std::vector<std::string>& item_ids) const {
        if (!GH_HAS(api_, critical_read)) throw ToolError(no_session_services());
        const std::string ids = Json(item_ids).dump(-1, ' ', false, Json::error_handler_t::replace);
        return host_answer([&](gh_sink* out) { return api_->critical_read(raw_, view(ids), out); });
    }

    // ---- Store credentials (ABI 1.4) ----

    // The session store's sign-in, for a family that signs in to the store
    // itself; granted == false with the host's code and sentence when it is
    // refused (CREDENTIALS_NOT_ALLOWED, CREDENTIALS_UNAVAILABLE,
    // CREDENTIALS_REFUSED, NOT_CONNECTED). Never put the password in a
    // result, an error or a log line: the host withholds such an answer.
    StoreCredentials store_credentials() const {
        StoreCredentials out;
        if (!GH_HAS(api_, store_credentials) || !GH_HAS(api_, sink_new) || !GH_HAS(api_, sink_bytes)) {
            out.code = "CREDENTIALS_UNAVAILABLE";
            out.message = "This host predates plugin ABI 1.4 and hands out no store credentials; update the host.";
            return out;
        }
        gh_sink* sink = api_->sink_new(raw_);
        if (!sink) throw std::runtime_error("the host gave no sink for its answer");
        const int32_t status = api_->store_credentials(raw_, sink);
        const std::string_view bytes = view(api_->sink_bytes(sink));
        const Json answer = bytes.empty() ? Json::object() : Json::parse(bytes, nullptr, false);
        if (status == GH_STATUS_OK && answer.is_object()) {
            out.granted = true;
            out.store = answer.value("store", std::string());
            out.user = answer.value("user", std::string());
            out.password = answer.value("password", std::string());
            return out;
        }
        if (status != GH_STATUS_TOOL_ERROR || !answer.is_object())
            throw std::runtime_error("the host failed to answer store_credentials");
        out.code = answer.value("code", std::string("CREDENTIALS_UNAVAILABLE"));
        out.message = answer.value("message", std::string("The host refused."));
        return out;
    }

    // ---- Multi round-trip requests (ABI 1.3) ----

    // The client's answer to the input request `key` when this round brought
    // one; otherwise `request` (from gh::input) is noted for this round and
    // the answer is std::nullopt. The answer comes from the client: check it.
    std::optional<Json> ask(const std::string& key, Json request) {
        const Json& responses = input_responses();
        if (auto it = responses.find(key); it != responses.end() && it->is_object()) return *it;
        asked_[key] = std::move(request);
        return std::nullopt;
    }

    // ask(), and when the answer is missing the handler stops here: the call
    // answers "input required" with every request asked so far this round.
    Json need(const std::string& key, Json request) {
        auto answer = ask(key, std::move(request));
        if (!answer) await_inputs();
        return *answer;
    }

    // Stops the handler when any ask() of this round is unanswered.
    void await_inputs() const {
        if (asked_.empty()) return;
        Json answer = {{"inputRequests", asked_}};
        if (!kept_state_.empty()) answer["requestState"] = kept_state_;
        throw InputRequired(answer.dump(-1, ' ', false, Json::error_handler_t::replace));
    }

    // ABI 1.7, for a tool with asks_before_task: everything the task needs
    // has been asked and answered, so the call goes on as a task. The
    // handler stops here and the host starts the task, which runs the
    // handler again from the top with the same answers (so need() returns
    // at once) and state; in the task, and in a call that does not become
    // one, start_task() returns at once.
    void start_task() const {
        const Json ctx = context();
        if (!ctx.value("taskStart", false)) return;
        Json answer = {{"startTask", true}};
        if (!kept_state_.empty()) answer["requestState"] = kept_state_;
        throw InputRequired(answer.dump(-1, ' ', false, Json::error_handler_t::replace));
    }

    // The id of the task this call runs as (ABI 1.7); empty for a plain call.
    std::string task_id() const {
        const Json ctx = context();
        auto task = ctx.find("task");
        if (task == ctx.end() || !task->is_object()) return {};
        return task->value("taskId", std::string());
    }

    // The W3C traceparent to pass on to what this call calls (ABI 1.8): the
    // caller's trace, with the host's span of this call as parent. Empty from
    // an older host.
    std::string traceparent() const {
        const Json ctx = context();
        auto trace = ctx.find("trace");
        if (trace == ctx.end() || !trace->is_object()) return {};
        return trace->value("traceparent", std::string());
    }

    // What the handler kept on the round before (keep_state); empty on the first.
    std::string state() const {
        if (!GH_HAS(api_, request_state)) return {};
        return std::string(view(api_->request_state(raw_)));
    }

    // What to get back from state() on the next round, at most 8 KiB. The
    // host seals it and binds it to this caller and these arguments.
    void keep_state(std::string state) { kept_state_ = std::move(state); }

    // Whether the client declared it can answer such input requests:
    // "elicitation" (forms), "elicitation.url", "sampling" or "roots".
    bool client_supports(std::string_view capability) const {
        const Json ctx = context();
        auto caps = ctx.find("clientCapabilities");
        if (caps == ctx.end() || !caps->is_object()) return false;
        if (capability == "elicitation.url") {
            auto e = caps->find("elicitation");
            return e != caps->end() && e->is_object() && e->contains("url");
        }
        auto c = caps->find(std::string(capability));
        if (c == caps->end() || !c->is_object()) return false;
        // "elicitation": {} declares forms; {"url": {}} alone declares pages only.
        return capability != "elicitation" || c->empty() || c->contains("form");
    }

    // The family's share of the host's state backend (ABI 1.3+). Throws
    // ToolError on an older host, std::runtime_error when the backend fails.
    std::optional<std::string> state_get(std::string_view key) const {
        require_state();
        return read_state(api_->state_get, key, "read");
    }
    // ttl_ms 0: kept until erased.
    void state_put(std::string_view key, std::string_view value, std::uint64_t ttl_ms = 0) const {
        require_state();
        if (api_->state_put(raw_, view(key), view(value), ttl_ms) != GH_STATUS_OK)
            throw std::runtime_error("the host's state backend failed to write");
    }
    // True when something was erased.
    bool state_erase(std::string_view key) const {
        require_state();
        const int32_t status = api_->state_erase(raw_, view(key));
        if (status != GH_STATUS_OK && status != GH_STATUS_NOT_FOUND)
            throw std::runtime_error("the host's state backend failed to erase");
        return status == GH_STATUS_OK;
    }
    // Erases `key` and answers what it held, as one step (ABI 1.4+): of any
    // number of callers taking one key at once, in this instance or another
    // on the same backend, exactly one gets the value. For what must be used
    // once. Throws ToolError on an older host, std::runtime_error when the
    // backend fails.
    std::optional<std::string> state_take(std::string_view key) const {
        require_state();
        if (!GH_HAS(api_, state_take))
            throw ToolError("This host cannot take a kept value in one step (it predates plugin ABI 1.4), so "
                            "nothing meant for single use is handed out; update the host.");
        return read_state(api_->state_take, key, "take");
    }

    const gh_host_api* api() const { return api_; }
    gh_call* raw() const { return raw_; }

private:
    const Json& input_responses() {
        if (!responses_) {
            responses_ = Json::object();
            if (GH_HAS(api_, input_responses)) {
                Json parsed = Json::parse(view(api_->input_responses(raw_)), nullptr, false);
                if (parsed.is_object()) responses_ = std::move(parsed);
            }
        }
        return *responses_;
    }

    void require_state() const {
        if (!GH_HAS(api_, state_erase) || !GH_HAS(api_, sink_new))
            throw ToolError("This host keeps no state for families (it predates plugin ABI 1.3); update the host.");
    }

    // state_get and state_take answer alike: the value through a sink, or NOT_FOUND.
    std::optional<std::string> read_state(int32_t (*host_read)(gh_call*, gh_str, gh_sink*), std::string_view key,
                                          const char* verb) const {
        gh_sink* sink = api_->sink_new(raw_);
        if (!sink) throw std::runtime_error("the host gave no sink for its answer");
        const int32_t status = host_read(raw_, view(key), sink);
        if (status == GH_STATUS_NOT_FOUND) return std::nullopt;
        if (status != GH_STATUS_OK) throw std::runtime_error(std::string("the host's state backend failed to ") + verb);
        return std::string(view(api_->sink_bytes(sink)));
    }

    static const char* no_session_services() {
        return "This host has no session services (it predates plugin ABI 1.1); update the host.";
    }

    // A host service answers into a sink the host made for this call.
    template <class Fn> Json host_answer(Fn&& fn) const {
        if (!GH_HAS(api_, sink_new) || !GH_HAS(api_, sink_bytes)) throw ToolError(no_session_services());
        gh_sink* sink = api_->sink_new(raw_);
        if (!sink) throw std::runtime_error("the host gave no sink for its answer");
        const int32_t status = fn(sink);
        const std::string_view bytes = view(api_->sink_bytes(sink));
        Json answer = bytes.empty() ? Json::object() : Json::parse(bytes);
        if (status == GH_STATUS_OK) return answer;
        if (status == GH_STATUS_TOOL_ERROR || status == GH_STATUS_INVALID_ARGS) {
            std::string text = answer.value("message", std::string("The host refused."));
            auto code = answer.find("code");
            if (code == answer.end() || !code->is_string()) throw ToolError(text);
            auto next = answer.find("next");
            throw Refusal(code->get<std::string>(), std::move(text),
                          next != answer.end() && next->is_object() ? *next : Json::object());
        }
        throw std::runtime_error("host session service failed: " + answer.value("message", std::string()));
    }

    const gh_host_api* api_;
    gh_call* raw_;
    Json arguments_;
    std::optional<Json> responses_;
    Json asked_ = Json::object();
    std::string kept_state_;
};

using Handler = std::function<Result(Call&)>;

// Standard base64 (RFC 4648, with padding), for blob contents and images.
inline std::string base64(std::string_view bytes) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                           (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
        out += alphabet[v >> 18];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    if (i < bytes.size()) {
        const bool two = i + 1 < bytes.size();
        const unsigned v =
            (static_cast<unsigned char>(bytes[i]) << 16) | (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0);
        out += alphabet[v >> 18];
        out += alphabet[(v >> 12) & 63];
        out += two ? alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// One resource read as the handler sees it (ABI 1.2): the URI asked for and,
// for a template, its variables (also reachable as arguments()). Valid only
// during the handler.
class Read : public Call {
public:
    Read(const gh_host_api* api, gh_call* raw, std::string uri, Json variables)
        : Call(api, raw, std::move(variables)), uri_(std::move(uri)) {}

    const std::string& uri() const { return uri_; }
    std::string variable(const char* name) const { return arg<std::string>(name); }

private:
    std::string uri_;
};

// What a read returns: one or more contents. A content without a URI gets the
// URI that was read.
class ReadResult {
public:
    static ReadResult text(std::string text, std::string mime_type = {}) {
        return ReadResult().add_text(std::move(text), std::move(mime_type));
    }
    // Raw bytes; the layer encodes them as base64.
    static ReadResult blob(std::string_view bytes, std::string mime_type = {}) {
        return ReadResult().add_blob(bytes, std::move(mime_type));
    }

    ReadResult& add_text(std::string text, std::string mime_type = {}, std::string uri = {}) {
        return add(item("text", std::move(text), std::move(mime_type), std::move(uri)));
    }
    ReadResult& add_blob(std::string_view bytes, std::string mime_type = {}, std::string uri = {}) {
        return add(item("blob", base64(bytes), std::move(mime_type), std::move(uri)));
    }
    ReadResult& add(Json contents) {
        contents_.push_back(std::move(contents));
        return *this;
    }

    // Caching hints for 2026-07-28 clients. Without them the answer is
    // private and stale at once; say public only when no caller's identity
    // shapes the content.
    ReadResult& cache(std::uint64_t ttl_ms, bool same_for_everyone = false) {
        ttl_ms_ = ttl_ms;
        public_ = same_for_everyone;
        return *this;
    }

    std::string serialize(const std::string& read_uri) const {
        Json contents = contents_;
        for (auto& c : contents)
            if (!c.contains("uri")) c["uri"] = read_uri;
        Json out{{"contents", std::move(contents)}};
        if (ttl_ms_) {
            out["ttlMs"] = *ttl_ms_;
            out["cacheScope"] = public_ ? "public" : "private";
        }
        return out.dump(-1, ' ', false, Json::error_handler_t::replace);
    }

private:
    static Json item(const char* kind, std::string value, std::string mime_type, std::string uri) {
        Json c{{kind, std::move(value)}};
        if (!mime_type.empty()) c["mimeType"] = std::move(mime_type);
        if (!uri.empty()) c["uri"] = std::move(uri);
        return c;
    }

    Json contents_ = Json::array();
    std::optional<std::uint64_t> ttl_ms_;
    bool public_ = false;
};

// What a prompt returns: messages, each a role and one MCP content block.
class PromptResult {
public:
    static PromptResult text(std::string text, std::string role = "user") {
        return PromptResult().add_text(std::move(text), std::move(role));
    }

    PromptResult& add_text(std::string text, std::string role = "user") {
        return add(Json{{"type", "text"}, {"text", std::move(text)}}, std::move(role));
    }
    // Any content block: {"type": "image", "data", "mimeType"}, {"type": "resource", "resource": {...}}, ...
    PromptResult& add(Json content, std::string role = "user") {
        messages_.push_back(Json{{"role", std::move(role)}, {"content", std::move(content)}});
        return *this;
    }
    PromptResult& describe(std::string description) {
        description_ = std::move(description);
        return *this;
    }

    std::string serialize() const {
        Json out{{"messages", messages_}};
        if (!description_.empty()) out["description"] = description_;
        return out.dump(-1, ' ', false, Json::error_handler_t::replace);
    }

private:
    Json messages_ = Json::array();
    std::string description_;
};

// What completion/complete asks: the argument (or template variable), what
// the user typed so far, and the arguments already chosen.
struct CompletionRequest {
    std::string argument;
    std::string value;
    Json context; // object
};

using ReadHandler = std::function<ReadResult(Read&)>;
using PromptHandler = std::function<PromptResult(Call&)>;
// Returns the suggestions, best first; the host passes on at most 100.
using CompleteHandler = std::function<std::vector<std::string>(const CompletionRequest&)>;

// The state of a plugin that keeps none: gh::Plugin<> hands its handlers nothing.
struct NoState {};

// One handler of a gh::Plugin<State>. It is written with the plugin's state
// first, (State&, Args...), or without it, (Args...): a stateless plugin
// writes every handler the short way, and so may a stateful one where a
// handler needs no state.
template <class State, class R, class... Args> class Callback {
public:
    Callback() = default;
    Callback(std::nullptr_t) {}
    template <class F, std::enable_if_t<std::is_invocable_r_v<R, F&, State&, Args...>, int> = 0>
    Callback(F f) : fn_(std::move(f)) {}
    template <class F,
              std::enable_if_t<!std::is_invocable_r_v<R, F&, State&, Args...> && std::is_invocable_r_v<R, F&, Args...>,
                               int> = 0>
    Callback(F f) {
        if constexpr (std::is_constructible_v<bool, const F&>)
            if (!static_cast<bool>(f)) return; // an empty std::function stays empty
        fn_ = [f = std::move(f)](State&, Args... args) mutable -> R { return f(std::forward<Args>(args)...); };
    }

    explicit operator bool() const noexcept { return static_cast<bool>(fn_); }
    R operator()(State& state, Args... args) const { return fn_(state, std::forward<Args>(args)...); }

private:
    std::function<R(State&, Args...)> fn_;
};

// One run of a command-line verb (ABI 1.6): `gatehouse <verb> ARGS...`. What
// it prints goes to stdout (out) and stderr (err) when the verb returns.
class Command {
public:
    Command(const gh_host_api* api, std::vector<std::string> args, Json context, gh_sink* out, gh_sink* err)
        : api_(api), args_(std::move(args)), context_(std::move(context)), out_(out), err_(err) {}

    // The words after the verb; the host's own options (--config FILE) are taken out.
    const std::vector<std::string>& args() const { return args_; }
    // {"verb", "config_file", "data_dir"}.
    const Json& context() const { return context_; }
    std::string verb() const { return context_.value("verb", std::string()); }
    // The configuration's path, or "<embedded gatehouse.yaml>", for messages.
    std::string config_file() const { return context_.value("config_file", std::string()); }
    // The family's data folder, as init got it.
    std::string data_dir() const { return context_.value("data_dir", std::string()); }

    void out(std::string_view text) const {
        if (api_ && out_) api_->sink_write(out_, view(text));
    }
    void err(std::string_view text) const {
        if (api_ && err_) api_->sink_write(err_, view(text));
    }

private:
    const gh_host_api* api_;
    std::vector<std::string> args_;
    Json context_;
    gh_sink* out_;
    gh_sink* err_;
};

template <class State = NoState> struct ResourceSpec {
    std::string uri;
    std::string name;
    std::string title;
    std::string description;
    std::string mime_type;
    std::string annotations; // JSON object (MCP Annotations), optional
    std::optional<std::uint64_t> size;
    Callback<State, ReadResult, Read&> read;
};

template <class State = NoState> struct ResourceTemplateSpec {
    std::string uri_template; // literal text, {name} and {+name}
    std::string name;
    std::string title;
    std::string description;
    std::string mime_type;
    std::string annotations;
    Callback<State, ReadResult, Read&> read;
    Callback<State, std::vector<std::string>, const CompletionRequest&> complete; // optional
};

struct PromptArgumentSpec {
    std::string name;
    std::string title;
    std::string description;
    bool required = false;
};

template <class State = NoState> struct PromptSpec {
    std::string name;
    std::string title;
    std::string description;
    std::vector<PromptArgumentSpec> arguments;
    Callback<State, PromptResult, Call&> get;
    Callback<State, std::vector<std::string>, const CompletionRequest&> complete; // optional
};

template <class State = NoState> struct ToolSpec {
    std::string name;
    std::string title;
    std::string description;
    std::string input_schema = R"({"type":"object","properties":{}})";
    std::string output_schema;
    std::string scope;
    std::vector<std::string> required_scopes;
    Risk risk = Risk::read;
    std::string rules;
    bool gate_exempt = false;
    std::string annotations;
    Callback<State, Result, Call&> handler;
    bool reads_critical = false;          // ABI 1.1+: runs while critical notes are unread, to show them
    TaskSupport task = TaskSupport::none; // ABI 1.7+
    // ABI 1.7+, with `task`: the handler asks (need) before its task starts,
    // as a plain call, and calls start_task() once it has what it needs.
    bool asks_before_task = false;
};

// ABI 1.3: a page the host serves at /pages/<family>/<name>/<token>. show
// returns {"title", "intro"?, "fields": [{"label","value"}], "actions":
// [{"id","label"}], "notice"?}; act returns {"message", "redirect_url"?}.
// Both get the token as call.arg<std::string>("token"), act also "action".
// Throw NotFound for an unknown token, ToolError when the action no longer
// applies.
using PageHandler = std::function<Json(Call&)>;
template <class State = NoState> struct PageSpec {
    std::string name;
    Callback<State, Json, Call&> show;
    Callback<State, Json, Call&> act;
};

// ABI 1.6: a command-line verb, `gatehouse <name> ARGS... [--config FILE]`,
// run after init in the CLI process. run returns the exit status (0 done,
// 1 failed, 2 wrong usage); a thrown InvalidArguments ends it with 2, any
// other exception with 1, its text on stderr.
template <class State = NoState> struct CommandSpec {
    std::string name;    // [a-z][a-z0-9-]{0,31}, never one of the host's verbs
    std::string usage;   // what follows the verb, e.g. "[use SLUG]"
    std::string summary; // one sentence for gatehouse --help
    Callback<State, int, Command&> run;
};

struct PluginSpec {
    std::string name;
    std::string version;
    std::string family;
    std::string rules;
    // Whether the host may run this family's handlers on several threads at
    // once (GH_PLUGIN_REENTRANT). True here, unlike the C ABI's default:
    // handlers that share mutable data (in State, or globals) must guard it
    // themselves, or set this false to have the host run one at a time.
    bool reentrant = true;
};

// init receives {"data_dir": ..., "settings": {...}}; throw to refuse loading.
using InitHandler = std::function<void(const Json& config)>;
// Given {"store", "user", "principal"}, returns [{"id", "title"}, ...] (ABI 1.1+).
using CriticalItemsHandler = std::function<Json(const Json& owner)>;
using ShutdownHandler = std::function<void()>;

// One family: its tools and the rest it offers, and the C descriptor built
// from them. State is what the family keeps per host, made by on_init from
// the configuration and handed to every handler as State&; it is destroyed
// at shutdown. A plugin without state is a gh::Plugin<> (gh::Plugin for
// short), whose handlers take no state.
//
// Everything is declared in the registration window: from construction until
// the host takes the descriptor (gh_plugin_entry), i.e. at namespace scope in
// static initialisation. A declaration later (in on_init, in a handler) would
// never be published, so it throws std::logic_error with a sentence saying so,
// also logged; inside on_init that fails the load with that sentence.
template <class State = NoState> class Plugin {
public:
    explicit Plugin(PluginSpec spec) : spec_(std::move(spec)) {}
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;

    const ToolSpec<State>& tool(ToolSpec<State> spec) {
        require_window("tool", spec.name);
        auto& slot = tools_.emplace_back();
        slot.spec = std::move(spec);
        slot.required_scopes_json = Json(slot.spec.required_scopes).dump();
        slot.owner = this;
        return slot.spec;
    }

    // ABI 1.2: a resource, a resource template, a prompt.
    const ResourceSpec<State>& resource(ResourceSpec<State> spec) {
        require_window("resource", spec.uri);
        auto& slot = resources_.emplace_back();
        slot.spec = std::move(spec);
        slot.owner = this;
        return slot.spec;
    }
    const ResourceTemplateSpec<State>& resource_template(ResourceTemplateSpec<State> spec) {
        require_window("resource template", spec.uri_template);
        auto& slot = templates_.emplace_back();
        slot.spec = std::move(spec);
        slot.owner = this;
        return slot.spec;
    }
    const PromptSpec<State>& prompt(PromptSpec<State> spec) {
        require_window("prompt", spec.name);
        auto& slot = prompts_.emplace_back();
        slot.spec = std::move(spec);
        slot.owner = this;
        Json arguments = Json::array();
        for (const auto& a : slot.spec.arguments) {
            Json arg{{"name", a.name}};
            if (!a.title.empty()) arg["title"] = a.title;
            if (!a.description.empty()) arg["description"] = a.description;
            if (a.required) arg["required"] = true;
            arguments.push_back(std::move(arg));
        }
        slot.arguments_json = slot.spec.arguments.empty() ? std::string() : arguments.dump();
        return slot.spec;
    }

    // ABI 1.3: a page.
    const PageSpec<State>& page(PageSpec<State> spec) {
        require_window("page", spec.name);
        auto& slot = pages_.emplace_back();
        slot.spec = std::move(spec);
        slot.owner = this;
        return slot.spec;
    }

    // ABI 1.6: a command-line verb.
    const CommandSpec<State>& command(CommandSpec<State> spec) {
        require_window("command", spec.name);
        auto& slot = commands_.emplace_back();
        slot.spec = std::move(spec);
        slot.owner = this;
        return slot.spec;
    }

    // Makes the state from {"data_dir": ..., "settings": {...}}: `make`
    // returns a State, a std::unique_ptr<State>, or nothing (a stateless
    // plugin, or a State made by its default constructor). Throw to refuse
    // loading. Without on_init, a State is default-constructed.
    template <class F> void on_init(F make) {
        using Made = std::invoke_result_t<F&, const Json&>;
        init_ = [make = std::move(make)](const Json& config) mutable -> std::unique_ptr<State> {
            if constexpr (std::is_void_v<Made>) {
                make(config);
                return default_state();
            } else if constexpr (std::is_same_v<Made, std::unique_ptr<State>>) {
                return make(config);
            } else {
                return std::make_unique<State>(make(config));
            }
        };
    }
    // Runs at shutdown, before the state is destroyed: (State&) or ().
    void on_shutdown(Callback<State, void> handler) { shutdown_ = std::move(handler); }
    // ABI 1.1: (State&, const Json& owner) or (const Json& owner).
    void on_critical_items(Callback<State, Json, const Json&> handler) {
        require_window("on_critical_items", "");
        critical_items_ = std::move(handler);
    }

    const gh_host_api* api() const { return api_; }

    void log(LogLevel level, std::string_view message) const {
        if (api_) api_->log(nullptr, static_cast<int32_t>(level), view(message));
    }

    // Tell open subscriptions what this family offers changed (from any
    // thread; nothing happens on a host older than ABI 1.2).
    void tools_changed() const { notify(GH_CHANGE_TOOLS_LIST, {}); }
    void prompts_changed() const { notify(GH_CHANGE_PROMPTS_LIST, {}); }
    void resources_changed() const { notify(GH_CHANGE_RESOURCES_LIST, {}); }
    void resource_updated(std::string_view uri) const { notify(GH_CHANGE_RESOURCE_UPDATED, uri); }

    // Builds the C descriptor and closes the registration window. `init` is
    // a function that knows this object (GH_EXPORT_PLUGIN makes one), so no
    // registry shared between libraries is needed.
    const gh_plugin_desc* descriptor(const gh_host_api* api, gh_init_fn init) noexcept {
        api_ = api;
        sealed_ = true;
        tool_descs_.clear();
        tool_ptrs_.clear();
        tool_descs_.reserve(tools_.size());
        for (auto& t : tools_) {
            gh_tool_desc d{};
            d.struct_size = sizeof(gh_tool_desc);
            d.flags = (t.spec.gate_exempt ? GH_TOOL_GATE_EXEMPT : 0u) |
                      (t.spec.reads_critical ? GH_TOOL_READS_CRITICAL : 0u) |
                      (t.spec.asks_before_task ? GH_TOOL_ASKS_BEFORE_TASK : 0u);
            d.task_support = static_cast<uint32_t>(t.spec.task);
            d.name = view(t.spec.name);
            d.title = view(t.spec.title);
            d.description = view(t.spec.description);
            d.input_schema = view(t.spec.input_schema);
            d.output_schema = view(t.spec.output_schema);
            d.scope = view(t.spec.scope);
            d.required_scopes = view(t.required_scopes_json);
            d.risk = static_cast<uint32_t>(t.spec.risk);
            d.rules = view(t.spec.rules);
            d.annotations = view(t.spec.annotations);
            d.call = &Plugin::call_trampoline;
            d.tool_data = &t;
            tool_descs_.push_back(d);
        }
        for (auto& d : tool_descs_)
            tool_ptrs_.push_back(&d);

        desc_ = gh_plugin_desc{};
        desc_.struct_size = sizeof(gh_plugin_desc);
        desc_.abi_version = GH_ABI_VERSION;
        desc_.flags = spec_.reentrant ? GH_PLUGIN_REENTRANT : 0u;
        desc_.tool_count = static_cast<uint32_t>(tool_ptrs_.size());
        desc_.name = view(spec_.name);
        desc_.version = view(spec_.version);
        desc_.family = view(spec_.family);
        desc_.rules = view(spec_.rules);
        desc_.tools = tool_ptrs_.data();
        desc_.init = init;
        desc_.shutdown = &Plugin::shutdown_trampoline;
        desc_.critical_items = critical_items_ ? &Plugin::critical_items_trampoline : nullptr;
        describe_offer();
        describe_commands();
        return &desc_;
    }

    static int32_t init(Plugin& self, const gh_host_api* api, gh_str config, void** state_out,
                        gh_sink* error) noexcept {
        const auto report = [&](std::string_view text) { write(api, error, text); };
        return guarded(
            api, kNoAnswers,
            [&] {
                auto instance = std::make_unique<Instance>();
                instance->plugin = &self;
                if (self.init_)
                    instance->state = self.init_(Json::parse(view(config)));
                else
                    instance->state = default_state();
                if (!instance->state) throw std::logic_error("on_init made no state");
                *state_out = instance.release();
                return GH_STATUS_OK;
            },
            report, "init failed with an unknown exception");
    }

private:
    // What init hands the host as the plugin state, passed to every callback.
    struct Instance {
        Plugin* plugin = nullptr;
        std::unique_ptr<State> state;
    };

    static std::unique_ptr<State> default_state() {
        if constexpr (std::is_default_constructible_v<State>)
            return std::make_unique<State>();
        else
            throw std::logic_error("this plugin's state has no default constructor; on_init must make it");
    }

    // The handlers' state: the one init made. A stateless plugin's handlers
    // need none, so they also run for a host (or a test) that passes none.
    static State& state_of(void* plugin_state) {
        if constexpr (std::is_same_v<State, NoState>) {
            static NoState none;
            return none;
        } else {
            if (!plugin_state) throw std::logic_error("a handler ran before init made the plugin's state");
            return *static_cast<Instance*>(plugin_state)->state;
        }
    }

    void require_window(const char* what, const std::string& name) const {
        if (!sealed_) return;
        const std::string sentence = "plugin '" + spec_.name + "': " + what + (name.empty() ? "" : " '" + name + "'") +
                                     " is declared after the host took the descriptor, so the host would never "
                                     "publish it; declare it at namespace scope (static initialisation), before "
                                     "the plugin is loaded";
        log(LogLevel::error, sentence);
        throw std::logic_error(sentence);
    }

    void notify(int32_t kind, std::string_view uri) const {
        if (GH_HAS(api_, notify_changed)) api_->notify_changed(nullptr, kind, view(uri));
    }

    struct ToolSlot {
        ToolSpec<State> spec;
        std::string required_scopes_json;
        Plugin* owner = nullptr;
    };
    struct ResourceSlot {
        ResourceSpec<State> spec;
        Plugin* owner = nullptr;
    };
    struct TemplateSlot {
        ResourceTemplateSpec<State> spec;
        Plugin* owner = nullptr;
    };
    struct PromptSlot {
        PromptSpec<State> spec;
        std::string arguments_json;
        Plugin* owner = nullptr;
    };
    struct PageSlot {
        PageSpec<State> spec;
        Plugin* owner = nullptr;
    };
    struct CommandSlot {
        CommandSpec<State> spec;
        Plugin* owner = nullptr;
    };

    void describe_offer() {
        resource_descs_.clear();
        resource_ptrs_.clear();
        template_descs_.clear();
        template_ptrs_.clear();
        prompt_descs_.clear();
        prompt_ptrs_.clear();
        resource_descs_.reserve(resources_.size());
        for (auto& r : resources_) {
            gh_resource_desc d{};
            d.struct_size = sizeof(gh_resource_desc);
            d.flags = r.spec.size ? GH_RESOURCE_HAS_SIZE : 0u;
            d.uri = view(r.spec.uri);
            d.name = view(r.spec.name);
            d.title = view(r.spec.title);
            d.description = view(r.spec.description);
            d.mime_type = view(r.spec.mime_type);
            d.annotations = view(r.spec.annotations);
            d.size = r.spec.size.value_or(0);
            d.read = &Plugin::read_trampoline<ResourceSlot>;
            d.resource_data = &r;
            resource_descs_.push_back(d);
        }
        for (auto& d : resource_descs_)
            resource_ptrs_.push_back(&d);
        template_descs_.reserve(templates_.size());
        for (auto& t : templates_) {
            gh_resource_template_desc d{};
            d.struct_size = sizeof(gh_resource_template_desc);
            d.uri_template = view(t.spec.uri_template);
            d.name = view(t.spec.name);
            d.title = view(t.spec.title);
            d.description = view(t.spec.description);
            d.mime_type = view(t.spec.mime_type);
            d.annotations = view(t.spec.annotations);
            d.read = &Plugin::read_trampoline<TemplateSlot>;
            d.complete = t.spec.complete ? &Plugin::complete_trampoline<TemplateSlot> : nullptr;
            d.template_data = &t;
            template_descs_.push_back(d);
        }
        for (auto& d : template_descs_)
            template_ptrs_.push_back(&d);
        prompt_descs_.reserve(prompts_.size());
        for (auto& p : prompts_) {
            gh_prompt_desc d{};
            d.struct_size = sizeof(gh_prompt_desc);
            d.name = view(p.spec.name);
            d.title = view(p.spec.title);
            d.description = view(p.spec.description);
            d.arguments = view(p.arguments_json);
            d.get = &Plugin::prompt_trampoline;
            d.complete = p.spec.complete ? &Plugin::complete_trampoline<PromptSlot> : nullptr;
            d.prompt_data = &p;
            prompt_descs_.push_back(d);
        }
        for (auto& d : prompt_descs_)
            prompt_ptrs_.push_back(&d);
        desc_.resource_count = static_cast<uint32_t>(resource_ptrs_.size());
        desc_.resources = resource_ptrs_.data();
        desc_.resource_template_count = static_cast<uint32_t>(template_ptrs_.size());
        desc_.resource_templates = template_ptrs_.data();
        desc_.prompt_count = static_cast<uint32_t>(prompt_ptrs_.size());
        desc_.prompts = prompt_ptrs_.data();
        page_descs_.clear();
        page_ptrs_.clear();
        page_descs_.reserve(pages_.size());
        for (auto& p : pages_) {
            gh_page_desc d{};
            d.struct_size = sizeof(gh_page_desc);
            d.name = view(p.spec.name);
            d.show = &Plugin::page_trampoline<false>;
            d.act = &Plugin::page_trampoline<true>;
            d.page_data = &p;
            page_descs_.push_back(d);
        }
        for (auto& d : page_descs_)
            page_ptrs_.push_back(&d);
        desc_.page_count = static_cast<uint32_t>(page_ptrs_.size());
        desc_.pages = page_ptrs_.data();
    }

    void describe_commands() {
        command_descs_.clear();
        command_ptrs_.clear();
        command_descs_.reserve(commands_.size());
        for (auto& c : commands_) {
            gh_command_desc d{};
            d.struct_size = sizeof(gh_command_desc);
            d.name = view(c.spec.name);
            d.usage = view(c.spec.usage);
            d.summary = view(c.spec.summary);
            d.run = &Plugin::command_trampoline;
            d.command_data = &c;
            command_descs_.push_back(d);
        }
        for (auto& d : command_descs_)
            command_ptrs_.push_back(&d);
        desc_.command_count = static_cast<uint32_t>(command_ptrs_.size());
        desc_.commands = command_ptrs_.empty() ? nullptr : command_ptrs_.data();
    }

    // Which answers besides OK and INTERNAL a callback may give; an exception
    // whose answer it may not give is a fault inside the plugin.
    static constexpr unsigned kNoAnswers = 0;
    static constexpr unsigned kInputRequired = 1u << 0; // GH_STATUS_INPUT_REQUIRED
    static constexpr unsigned kNotFound = 1u << 1;      // GH_STATUS_NOT_FOUND
    static constexpr unsigned kToolErrors = 1u << 2;    // GH_STATUS_TOOL_ERROR, GH_STATUS_INVALID_ARGS
    static constexpr unsigned kRefused = 1u << 3;       // GH_STATUS_REFUSED, when the host knows it (ABI 1.5)

    // The one place an exception becomes a status: every C callback this
    // layer emits runs its body here, so no exception crosses the ABI.
    // `report` takes the text the status carries (the sink, or the log).
    template <class Body, class Report>
    static int32_t guarded(const gh_host_api* api, unsigned answers, Body&& body, Report&& report,
                           const char* unknown = "unknown exception") noexcept {
        try {
            return body();
        } catch (const InputRequired& e) {
            if (answers & kInputRequired) {
                report(e.answer());
                return GH_STATUS_INPUT_REQUIRED;
            }
            report(e.what());
        } catch (const NotFound& e) {
            if (answers & kNotFound) return GH_STATUS_NOT_FOUND;
            report(e.what());
        } catch (const Refusal& e) {
            if ((answers & kRefused) && GH_HOST_KNOWS_REFUSALS(api)) {
                report(e.answer());
                return GH_STATUS_REFUSED;
            }
            // An older host would take the new status for a fault: it gets the text.
            report(e.what());
            if (answers & (kToolErrors | kRefused)) return GH_STATUS_TOOL_ERROR;
        } catch (const ToolError& e) {
            report(e.what());
            if (answers & kToolErrors) return GH_STATUS_TOOL_ERROR;
        } catch (const InvalidArguments& e) {
            report(e.what());
            if (answers & kToolErrors) return GH_STATUS_INVALID_ARGS;
        } catch (const std::exception& e) {
            report(e.what());
        } catch (...) {
            report(unknown);
        }
        return GH_STATUS_INTERNAL;
    }

    // A callback that answers through the host's sink `out`.
    template <class Body>
    static int32_t guarded(const gh_host_api* api, gh_sink* out, unsigned answers, Body&& body) noexcept {
        return guarded(api, answers, std::forward<Body>(body), [&](std::string_view text) { write(api, out, text); });
    }

    static constexpr unsigned kReadAnswers = kInputRequired | kNotFound | kToolErrors;

    template <class Slot>
    static int32_t read_trampoline(void* state, void* data, gh_call* call, gh_str uri, gh_str variables,
                                   gh_sink* out) noexcept {
        auto* slot = static_cast<Slot*>(data);
        const gh_host_api* api = slot->owner->api_;
        return guarded(api, out, kReadAnswers, [&] {
            Read read(api, call, std::string(view(uri)), Json::parse(view(variables)));
            const ReadResult result = slot->spec.read(state_of(state), read);
            if (read.cancelled()) return GH_STATUS_CANCELLED;
            write(api, out, result.serialize(read.uri()));
            return GH_STATUS_OK;
        });
    }

    template <bool Acting>
    static int32_t page_trampoline(void* state, void* data, gh_call* call, gh_str token, gh_str action,
                                   gh_sink* out) noexcept {
        auto* slot = static_cast<PageSlot*>(data);
        const gh_host_api* api = slot->owner->api_;
        return guarded(api, out, kReadAnswers, [&] {
            Json arguments{{"token", std::string(view(token))}};
            if (Acting) arguments["action"] = std::string(view(action));
            Call c(api, call, std::move(arguments));
            const Json answer = Acting ? slot->spec.act(state_of(state), c) : slot->spec.show(state_of(state), c);
            write(api, out, answer.dump(-1, ' ', false, Json::error_handler_t::replace));
            return GH_STATUS_OK;
        });
    }

    static int32_t prompt_trampoline(void* state, void* data, gh_call* call, gh_str arguments, gh_sink* out) noexcept {
        auto* slot = static_cast<PromptSlot*>(data);
        const gh_host_api* api = slot->owner->api_;
        return guarded(api, out, kReadAnswers, [&] {
            Call c(api, call, Json::parse(view(arguments)));
            write(api, out, slot->spec.get(state_of(state), c).serialize());
            return GH_STATUS_OK;
        });
    }

    template <class Slot>
    static int32_t complete_trampoline(void* state, void* data, gh_call*, gh_str argument, gh_str value, gh_str context,
                                       gh_sink* out) noexcept {
        auto* slot = static_cast<Slot*>(data);
        const gh_host_api* api = slot->owner->api_;
        return guarded(api, out, kReadAnswers, [&] {
            const CompletionRequest request{std::string(view(argument)), std::string(view(value)),
                                            Json::parse(view(context))};
            write(api, out,
                  Json{{"values", slot->spec.complete(state_of(state), request)}}.dump(-1, ' ', false,
                                                                                       Json::error_handler_t::replace));
            return GH_STATUS_OK;
        });
    }

    static int32_t call_trampoline(void* state, void* tool_data, gh_call* call, gh_str arguments,
                                   gh_sink* out) noexcept {
        auto* slot = static_cast<ToolSlot*>(tool_data);
        const gh_host_api* api = slot->owner->api_;
        return guarded(api, out, kInputRequired | kToolErrors | kRefused, [&] {
            // A call without arguments comes as "{}" (the host writes them
            // so): no parser is set up for it.
            const std::string_view text = view(arguments);
            Call c(api, call, text == "{}" ? Json::object() : Json::parse(text));
            Result r = slot->spec.handler(state_of(state), c);
            if (c.cancelled()) return GH_STATUS_CANCELLED;
            write(api, out, r.serialize());
            return GH_STATUS_OK;
        });
    }

    static int32_t command_trampoline(void* state, void* data, gh_str context, const gh_str* args, uint32_t arg_count,
                                      gh_sink* out, gh_sink* err) noexcept {
        auto* slot = static_cast<CommandSlot*>(data);
        const gh_host_api* api = slot->owner->api_;
        int exit_status = 1;
        const int32_t status = guarded(
            api, kToolErrors,
            [&] {
                std::vector<std::string> words;
                for (uint32_t i = 0; i < arg_count; ++i)
                    words.emplace_back(view(args[i]));
                Command command(api, std::move(words), Json::parse(view(context)), out, err);
                exit_status = slot->spec.run(state_of(state), command);
                return GH_STATUS_OK;
            },
            [&](std::string_view text) {
                write(api, err, "gatehouse " + slot->spec.name + ": " + std::string(text) + "\n");
            });
        if (status == GH_STATUS_OK) return exit_status;
        return status == GH_STATUS_INVALID_ARGS ? 2 : 1;
    }

    static int32_t critical_items_trampoline(void* state, gh_str owner, gh_sink* out) noexcept {
        auto* instance = static_cast<Instance*>(state);
        const gh_host_api* api = instance ? instance->plugin->api_ : nullptr;
        return guarded(api, out, kNoAnswers, [&] {
            if (!instance) throw std::logic_error("critical items asked before init");
            const Json items = instance->plugin->critical_items_(*instance->state, Json::parse(view(owner)));
            write(api, out, items.dump(-1, ' ', false, Json::error_handler_t::replace));
            return GH_STATUS_OK;
        });
    }

    static void shutdown_trampoline(void* state) noexcept {
        std::unique_ptr<Instance> instance(static_cast<Instance*>(state));
        if (!instance) return;
        Plugin& self = *instance->plugin;
        if (self.shutdown_)
            guarded(
                self.api_, kNoAnswers,
                [&] {
                    self.shutdown_(*instance->state);
                    return GH_STATUS_OK;
                },
                [&](std::string_view text) { self.log(LogLevel::error, "shutdown: " + std::string(text)); },
                "failed with an unknown exception");
        // The state goes with the instance, after the handler saw it.
        guarded(
            self.api_, kNoAnswers,
            [&] {
                instance.reset();
                return GH_STATUS_OK;
            },
            [&](std::string_view text) { self.log(LogLevel::error, "shutdown: " + std::string(text)); },
            "the state's destructor failed with an unknown exception");
    }

    static void write(const gh_host_api* api, gh_sink* sink, std::string_view text) noexcept {
        if (api && sink) api->sink_write(sink, view(text));
    }

    PluginSpec spec_;
    bool sealed_ = false;                // the registration window is closed: the host has the descriptor
    std::deque<ToolSlot> tools_;         // deque: slots never move, tool_data stays valid
    std::deque<ResourceSlot> resources_; // deques for the same reason as tools_
    std::deque<TemplateSlot> templates_;
    std::deque<PromptSlot> prompts_;
    std::deque<PageSlot> pages_;
    std::deque<CommandSlot> commands_;
    std::vector<gh_tool_desc> tool_descs_;
    std::vector<const gh_tool_desc*> tool_ptrs_;
    std::vector<gh_resource_desc> resource_descs_;
    std::vector<const gh_resource_desc*> resource_ptrs_;
    std::vector<gh_resource_template_desc> template_descs_;
    std::vector<const gh_resource_template_desc*> template_ptrs_;
    std::vector<gh_prompt_desc> prompt_descs_;
    std::vector<const gh_prompt_desc*> prompt_ptrs_;
    std::vector<gh_page_desc> page_descs_;
    std::vector<const gh_page_desc*> page_ptrs_;
    std::vector<gh_command_desc> command_descs_;
    std::vector<const gh_command_desc*> command_ptrs_;
    gh_plugin_desc desc_{};
    const gh_host_api* api_ = nullptr;
    std::function<std::unique_ptr<State>(const Json&)> init_;
    Callback<State, void> shutdown_;
    Callback<State, Json, const Json&> critical_items_;
};

// `gh::Plugin plugin{{...}}` is a plugin without state.
Plugin(PluginSpec)->Plugin<NoState>;

} // namespace gh

// Emits the plugin's one C entry symbol for the given gh::Plugin object.
#define GH_EXPORT_PLUGIN(plugin_object)                                                                                \
    extern "C" GH_EXPORT const gh_plugin_desc* gh_plugin_entry(const gh_host_api* api) {                               \
        return (plugin_object)                                                                                         \
            .descriptor(api,                                                                                           \
                        [](const gh_host_api* a, gh_str config, void** state, gh_sink* error) noexcept -> int32_t {    \
                            using PluginType = std::remove_cv_t<std::remove_reference_t<decltype(plugin_object)>>;     \
                            return PluginType::init(plugin_object, a, config, state, error);                           \
                        });                                                                                            \
    }
