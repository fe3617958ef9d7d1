#include "upstream/upstream_family.hpp"

#include "protocol/json_rpc.hpp"
#include "protocol/utf8_text.hpp"
#include "crypto/random_bytes.hpp"
#include "crypto/tls_settings.hpp"
#include "gate/refusal.hpp"
#include "mrtr/input_requests.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/host_api.hpp"
#include "plugins/plugin_loader.hpp"
#include "schema/json_schema.hpp"
#include "upstream/client_credentials.hpp"
#include "upstream/http_client_transport.hpp"
#include "upstream/stdio_client_transport.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <set>
#include <stdexcept>
#include <utility>

namespace gatehouse::upstream {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr auto kFirstBackoff = 100ms;
constexpr auto kLongestBackoff = 30s;
constexpr auto kLivedLongEnough = 30s;  // a connection that lasted this long starts the backoff over
constexpr auto kWatch = 100ms;          // how often the supervisor looks at the connection
constexpr auto kFirstListen = 1000ms;   // a subscription that ended is asked for again after this
constexpr auto kFewestRelists = 1000ms; // the least time between two listings a server asked for

// The wait after `wait`: twice as long, at most kLongestBackoff.
std::chrono::milliseconds doubled(std::chrono::milliseconds wait) {
    return std::min<std::chrono::milliseconds>(wait * 2, kLongestBackoff);
}

std::uint32_t risk_named(const std::string& name) {
    if (name == "read") return GH_RISK_READ;
    if (name == "money") return GH_RISK_MONEY;
    if (name == "destructive") return GH_RISK_DESTRUCTIVE;
    return GH_RISK_WRITE;
}

// An upstream declares no risk; its annotations hint at one. Without a
// hint a tool may change things, so it is a write.
std::uint32_t risk_of(const Json& annotations) {
    if (!annotations.is_object()) return GH_RISK_WRITE;
    // A hint that is not a boolean is no hint (and value<bool> would throw on it).
    const auto hinted = [&](const char* hint) {
        const auto it = annotations.find(hint);
        return it != annotations.end() && it->is_boolean() && it->get<bool>();
    };
    if (hinted("readOnlyHint")) return GH_RISK_READ;
    if (hinted("destructiveHint")) return GH_RISK_DESTRUCTIVE;
    return GH_RISK_WRITE;
}

// The hints an agent's client reads, and may skip a person's confirmation
// on, say what the host enforces: the server's readOnlyHint and
// destructiveHint are left out, so the loader derives both from the risk
// the gate checks (default_annotations, as for a plugin that sets none);
// its other hints pass only with the type MCP gives them.
Json passed_hints(const Json& listed) {
    Json passed = Json::object();
    if (!listed.is_object()) return passed;
    for (const char* hint : {"idempotentHint", "openWorldHint"})
        if (auto it = listed.find(hint); it != listed.end() && it->is_boolean()) passed[hint] = *it;
    if (auto title = listed.find("title"); title != listed.end() && title->is_string()) passed["title"] = *title;
    return passed;
}

// The text at `key` of a listed entry, or null: a server may list any JSON.
const std::string* text_at(const Json& entry, const char* key) {
    if (!entry.is_object()) return nullptr;
    const auto it = entry.find(key);
    return it != entry.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

std::string text_of(const Json& tool, const char* key) {
    const std::string* text = text_at(tool, key);
    return text ? *text : std::string();
}

// A server's schema without the regular expressions in it. The host checks
// arguments and results against an upstream's schemas, and its regex engine
// (std::regex, through the validator) backtracks: a pattern a server writes
// can take exponential time, overflow the stack on a long string, or use
// memory without bound as it compiles. So the host runs no regex an
// upstream wrote: `pattern` is left out, and `patternProperties` too,
// together with `additionalProperties` and `unevaluatedProperties` of the
// same object, so what the patterns allowed is not refused; so are the
// formats checked by regex (date, time, date-time), and uniqueItems, whose
// check is quadratic in an array the server sizes. Only checks are left
// out; nothing is added. The server still checks its own arguments.
bool holds_regex(const Json& value) {
    if (value.is_array()) return std::any_of(value.begin(), value.end(), holds_regex);
    if (!value.is_object()) return false;
    for (const auto& [key, member] : value.items())
        if ((key == "pattern" && member.is_string()) || key == "patternProperties" || holds_regex(member)) return true;
    return false;
}

// `names`: `schema` is a map of names to schemas (properties, $defs, …),
// whose keys are names, never keywords.
void drop_patterns(Json& schema, bool names = false) {
    if (schema.is_array()) {
        for (auto& each : schema)
            drop_patterns(each);
        return;
    }
    if (!schema.is_object()) return;
    if (names) {
        for (auto& [name, sub] : schema.items())
            drop_patterns(sub);
        return;
    }
    if (auto pattern = schema.find("pattern"); pattern != schema.end() && pattern->is_string()) schema.erase(pattern);
    // Formats the validator checks with std::regex, which recurses per
    // character of a result string no bound limits; and uniqueItems, which
    // compares every pair of an array the server chose the length of.
    if (auto format = schema.find("format");
        format != schema.end() && (*format == "date" || *format == "time" || *format == "date-time"))
        schema.erase(format);
    if (auto unique = schema.find("uniqueItems"); unique != schema.end() && unique->is_boolean()) schema.erase(unique);
    if (schema.contains("patternProperties")) {
        schema.erase("patternProperties");
        schema.erase("additionalProperties");
        schema.erase("unevaluatedProperties");
    }
    // Every member is walked, not only the keywords known to hold schemas:
    // a `$ref` can point anywhere in the document, draft 7's `dependencies`
    // or a vendor's own member included. What holds data (enum, const,
    // default, examples) is kept as it is, or, when a regex hides in it for
    // a `$ref` to reach, left out whole: either way checks are only ever
    // left out, never added.
    std::vector<std::string> data_with_regex;
    for (auto& [key, value] : schema.items()) {
        if (schema::is_data_keyword(key)) {
            if (holds_regex(value)) data_with_regex.push_back(key);
            continue;
        }
        drop_patterns(value, schema::is_name_map(key));
    }
    for (const auto& key : data_with_regex)
        schema.erase(key);
}

// A listed tool's schema at `key` as the host serves it: drop_patterns'.
std::string schema_of(const Json& tool, const char* key) {
    const auto it = tool.find(key);
    if (it == tool.end() || !it->is_object()) return std::string();
    Json schema = *it;
    drop_patterns(schema);
    return schema.dump();
}

std::string json_of(const Json& tool, const char* key) {
    const auto it = tool.find(key);
    return it != tool.end() && it->is_object() ? it->dump() : std::string();
}

// A secret of the host's (a token, a client secret) from its file or the
// environment; empty when neither is set. Never logged: the errors name
// where it should be, not what it is.
std::string secret_from(const std::filesystem::path& file, const std::string& env, const std::string& what) {
    std::string secret;
    if (!file.empty()) {
        std::ifstream in(file);
        if (!in) throw std::runtime_error("its " + what + " file " + file.string() + " cannot be read");
        std::stringstream text;
        text << in.rdbuf();
        secret = text.str();
    } else if (!env.empty()) {
        const char* value = std::getenv(env.c_str());
        if (!value || !*value) throw std::runtime_error("the environment has no " + env + " for its " + what);
        secret = value;
    }
    while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back())))
        secret.pop_back();
    return secret;
}

// The host's own token for an HTTP upstream: from its authorization server
// (kept across connections), or from its file or the environment, read at
// each connection (so a rotated file takes effect).
std::shared_ptr<BearerSource> bearer_for(const config::UpstreamEntry& entry,
                                         const std::shared_ptr<ClientCredentials>& oauth) {
    if (oauth) return oauth;
    std::string token = secret_from(entry.token_file, entry.token_env, "token");
    return token.empty() ? nullptr : std::make_shared<FixedBearer>(std::move(token));
}

constexpr int kResourceNotFound = -32002; // MCP's code for resources/read of an unknown URI
constexpr int kMethodNotFound = -32601;   // what a client answers a request it does not offer

// Calls of one family that wait for an agent's answers, and of them for one
// principal: each holds a request open upstream, not a worker.
constexpr std::size_t kMaxParked = 1024;
constexpr std::size_t kMaxParkedPerOwner = 16;
// And the text of their asks, in messages of the largest size: each ask is
// bounded by the message size alone, so without these a server asking large
// of every call would have the host hold 16 of its messages per call.
constexpr std::size_t kParkedMessages = 16;
constexpr std::size_t kParkedMessagesPerOwner = 4;
constexpr std::size_t kMaxStateBytes = 8 * 1024; // a round's state, as the plugin ABI bounds it
// How many times a call resumes after every ask of its server was refused
// (the agent's client offers none of what it asks) before the host ends it.
constexpr unsigned kMaxRefusedRounds = 16;

std::string new_handle() {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : crypto::random_bytes(16)) {
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
    return out;
}

bool relayed_method(const Json& method) {
    return method == "elicitation/create" || method == "sampling/createMessage" || method == "roots/list";
}

// Arguments the host hands on (it wrote them itself) as a JSON object.
Json object_of(gh_str text) {
    protocol::BoundedParse parsed = protocol::parse_bounded(std::string_view(text.ptr, text.len));
    return parsed.value.is_object() ? std::move(parsed.value) : Json::object();
}

} // namespace

UpstreamFamily::UpstreamFamily(UpstreamOptions options)
    : options_(std::move(options)), hook_(options_.entry.names, options_.entry.name),
      complaints_("upstream '" + options_.entry.name + "'") {
    if (const auto& oauth = options_.entry.oauth; oauth.configured()) {
        ClientCredentials::Options o;
        o.family = options_.entry.name;
        o.upstream_url = options_.entry.url;
        o.token_url = oauth.token_url;
        o.authorization_servers = oauth.authorization_servers;
        o.client_id = oauth.client_id;
        o.client_secret = secret_from(oauth.client_secret_file, oauth.client_secret_env, "client secret");
        o.scope = oauth.scope;
        o.resource = oauth.resource;
        o.timeout =
            std::min<std::chrono::milliseconds>(std::chrono::milliseconds(options_.entry.connect_timeout_ms), 10s);
        // The upstream's CA, as for the upstream itself, beside the public
        // ones; its client certificate and server_name are for it alone.
        o.tls.ca_file = options_.entry.tls.ca_file.string();
        o.tls.verify = options_.entry.tls.verify;
        o.tls.system_store_too = true;
        oauth_ = std::make_shared<ClientCredentials>(std::move(o));
    }
    if (options_.entry.url.rfind("https://", 0) == 0) {
        const auto& tls = options_.entry.tls;
        if (!tls.verify)
            spdlog::warn("upstream '{}': tls.verify is false: {} is reached over TLS WITHOUT checking its "
                         "certificate; anyone on the path can read and change what it is sent",
                         options_.entry.name, shown_url(options_.entry.url));
        try {
            tls_ = crypto::openssl().tls_connector(crypto::client_options(tls));
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(std::string("its tls settings cannot be used: ") + e.what());
        }
    }
    std::shared_ptr<ClientSession> session;
    try {
        session = connect();
        offer_ = make_offer(list(*session));
        protocol_version_ = session->protocol_version();
        connecting_.reset();
    } catch (const std::runtime_error& e) {
        connecting_.reset();
        if (session) session->close();
        if (options_.abandoned && options_.abandoned()) throw std::runtime_error("the host is stopping");
        if (!options_.wait_when_unreachable) throw;
        session.reset();
        down_because_ = e.what();
        next_attempt_ = Clock::now() + kFirstBackoff;
        offer_ = make_offer(Listing{});
    }
    std::lock_guard lock(mutex_);
    session_ = std::move(session);
    supervisor_ = std::thread([this] { supervise(); });
}

UpstreamFamily::~UpstreamFamily() {
    retire();
}

void UpstreamFamily::retire() {
    std::vector<Parked> parked;
    std::shared_ptr<ClientSession> connecting, session;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        retired_ = true;
        on_offer_changed_ = nullptr;
        down_because_ = "its upstreams entry was removed";
        connecting = std::move(connecting_);
        session = std::move(session_);
        changed_.notify_all();
    }
    // Both closed before the supervisor is joined: its open() of a new
    // connection, or its listing of this one (a server that said its lists
    // changed and holds the listing unanswered), ends at once, not after
    // connect_timeout_ms.
    if (connecting) connecting->close();
    if (session) session->close();
    if (supervisor_.joinable()) {
        // Retired from its own thread (what it heard dropped the last hold on
        // it): that thread ends by itself once it sees stopping_.
        if (supervisor_.get_id() == std::this_thread::get_id())
            supervisor_.detach();
        else
            supervisor_.join();
    }
    {
        std::lock_guard lock(mutex_);
        for (auto& [_, p] : parked_)
            parked.push_back(std::move(p));
        parked_.clear();
    }
    end_parked(std::move(parked), "the host is stopping");
}

std::shared_ptr<const UpstreamFamily::Offer> UpstreamFamily::offer() const {
    std::lock_guard lock(mutex_);
    return offer_;
}

void UpstreamFamily::on_offer_changed(std::function<void()> heard) {
    std::lock_guard lock(mutex_);
    if (!retired_) on_offer_changed_ = std::move(heard);
}

std::string UpstreamFamily::protocol_version() const {
    std::lock_guard lock(mutex_);
    return protocol_version_;
}

std::int64_t UpstreamFamily::retry_after_ms() const {
    std::lock_guard lock(mutex_);
    if (session_) return 0;
    return std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - Clock::now()).count());
}

bool UpstreamFamily::init(const std::string&, std::string&) {
    return true; // the connection was made when its tools were listed
}

std::shared_ptr<ClientSession> UpstreamFamily::connect() {
    const auto& entry = options_.entry;
    std::unique_ptr<ClientTransport> transport;
    if (!entry.command.empty()) {
        StdioClientTransport::Options o;
        o.family = entry.name;
        o.command = entry.command;
        o.env = entry.env;
        o.cwd = entry.cwd;
        o.max_message_bytes = options_.max_message_bytes;
        transport = std::make_unique<StdioClientTransport>(std::move(o));
    } else {
        HttpClientTransport::Options o;
        o.family = entry.name;
        o.url = entry.url;
        o.bearer = bearer_for(entry, oauth_);
        o.tls = tls_;
        o.tls_server_name = entry.tls.server_name;
        o.max_message_bytes = options_.max_message_bytes;
        o.connect_timeout =
            std::min<std::chrono::milliseconds>(std::chrono::milliseconds(entry.connect_timeout_ms), 10s);
        // A backstop: the session shuts a request's stream when it gives the
        // request up. A call parked while the agent is asked keeps its
        // answer stream quiet for as long as the input wait, and the answer
        // comes on it, so the stream is read that long.
        o.read_timeout = std::max(options_.tool_timeout, options_.input_wait) + 10s;
        o.param_headers = [this](const std::string& tool) {
            std::lock_guard lock(mutex_);
            auto it = offer_->param_headers.find(tool);
            return it == offer_->param_headers.end() ? std::vector<schema::ParamHeader>{} : it->second;
        };
        try {
            transport = std::make_unique<HttpClientTransport>(std::move(o));
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(e.what());
        }
    }
    ClientSession::Options o;
    o.family = entry.name;
    o.max_json_depth = options_.max_json_depth;
    o.max_held_ask_bytes = kParkedMessages * options_.max_message_bytes;
    o.client_version = options_.host_version;
    o.abandoned = options_.abandoned;
    auto session = std::make_shared<ClientSession>(std::move(transport), std::move(o), [this](const std::string&) {
        // From the connection's reader: the listing happens on the supervisor's thread.
        std::lock_guard lock(mutex_);
        relist_ = true;
        changed_.notify_all();
    });
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw std::runtime_error("the host is stopping");
        connecting_ = session;
    }
    try {
        session->open(std::chrono::milliseconds(entry.connect_timeout_ms));
    } catch (const std::exception& e) {
        {
            std::lock_guard lock(mutex_);
            connecting_.reset();
        }
        const std::string why = e.what();
        session->close();
        const std::string closed = session->why_closed();
        throw std::runtime_error("it did not connect (" + why + (closed.empty() || closed == why ? "" : "; " + closed) +
                                 ")");
    }
    // Before the first listing, so no change after it goes unheard.
    session->listen();
    return session; // still connecting_ until its caller has listed it
}

gh_str UpstreamFamily::Offer::keep(std::string text) {
    const std::string& kept = strings.emplace_back(std::move(text));
    return gh_str{kept.data(), kept.size()};
}

UpstreamFamily::Listing UpstreamFamily::list(ClientSession& session) const {
    const Json& capabilities = session.capabilities();
    const auto offers = [&](const char* what) { return capabilities.contains(what); };
    // Every list, all its pages, within connect_timeout_ms.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.entry.connect_timeout_ms);
    const auto list = [&](const char* method, const char* key) {
        try {
            return session.list_all(method, key, deadline);
        } catch (const std::exception& e) {
            throw std::runtime_error(std::string("it did not answer ") + method + ": " + e.what());
        }
    };
    Listing listing;
    if (offers("tools")) listing.tools = list("tools/list", "tools");
    // A URI names one resource: two servers that offer the same ones cannot
    // both serve them, and the operator leaves one's out.
    if (offers("resources") && options_.entry.resources) {
        listing.resources = list("resources/list", "resources");
        listing.templates = list("resources/templates/list", "resourceTemplates");
    }
    if (offers("prompts")) listing.prompts = list("prompts/list", "prompts");
    listing.completions = offers("completions");
    listing.server_info = session.server_info();
    return listing;
}

namespace {

// What a list names more than once (by `key`): each is ambiguous (which
// copy would a call, or a read, reach?) and the loader refuses a family that
// declares one twice, so every copy is left out and the rest is served.
std::set<std::string> listed_twice(const std::vector<Json>& listed, const char* key) {
    std::set<std::string> seen, twice;
    for (const auto& item : listed)
        if (const std::string* own = text_at(item, key); own && !seen.insert(*own).second) twice.insert(*own);
    return twice;
}

} // namespace

// The descriptor the loader reads, from what the upstream listed and what
// the operator said. A tool the host could not serve is left out and logged,
// not allowed to keep the others from loading.
std::shared_ptr<const UpstreamFamily::Offer> UpstreamFamily::make_offer(const Listing& listing) const {
    auto made = std::make_shared<Offer>();
    Offer& offer = *made;
    offer_tools(listing, offer);
    offer_resources(listing, offer);
    offer_prompts(listing, offer);
    offer.listed = Json::array({Json(listing.tools), Json(listing.resources), Json(listing.templates),
                                Json(listing.prompts), listing.completions})
                       .dump();

    const auto& entry = options_.entry;
    const Json& server_info = listing.server_info;
    gh_plugin_desc& desc = offer.desc;
    desc.struct_size = sizeof(gh_plugin_desc);
    desc.abi_version = GH_ABI_VERSION;
    desc.flags = GH_PLUGIN_REENTRANT; // the server takes concurrent requests; max_in_flight bounds them
    desc.tool_count = static_cast<std::uint32_t>(offer.tool_table.size());
    desc.tools = offer.tool_table.data();
    const std::string server_name = server_info.is_object() ? text_of(server_info, "name") : "";
    desc.name = offer.keep(server_name.empty() ? entry.name : protocol::cut_utf8(server_name, 128));
    desc.version = offer.keep(server_info.is_object() ? protocol::cut_utf8(text_of(server_info, "version"), 64) : "");
    desc.family = offer.keep(entry.name);
    desc.resource_count = static_cast<std::uint32_t>(offer.resource_table.size());
    desc.resources = offer.resource_table.data();
    desc.resource_template_count = static_cast<std::uint32_t>(offer.template_table.size());
    desc.resource_templates = offer.template_table.data();
    desc.prompt_count = static_cast<std::uint32_t>(offer.prompt_table.size());
    desc.prompts = offer.prompt_table.data();
    return made;
}

void UpstreamFamily::offer_tools(const Listing& listing, Offer& offer) const {
    const std::vector<Json>& listed = listing.tools;
    const auto& entry = options_.entry;
    const std::set<std::string> allow(entry.allow.begin(), entry.allow.end());
    const std::set<std::string> deny(entry.deny.begin(), entry.deny.end());
    std::set<std::string> seen;
    for (const auto& tool : listed)
        if (const std::string* own = text_at(tool, "name")) seen.insert(*own);
    const std::set<std::string> twice = listed_twice(listed, "name");
    for (const auto& name : twice)
        spdlog::warn("upstream '{}' lists tool '{}' more than once; every copy is left out", entry.name,
                     protocol::quoted_text(name, 200));
    const std::string required_scopes = Json(entry.required_scopes).dump();
    for (const auto& tool : listed) {
        const std::string* name = text_at(tool, "name");
        if (!name) {
            spdlog::warn("upstream '{}' lists a tool with no name; left out", entry.name);
            continue;
        }
        const std::string& own = *name;
        if (twice.count(own)) continue;
        if ((!allow.empty() && !allow.count(own)) || deny.count(own)) continue;
        OfferedTool offered;
        offered.own_name = own;
        offered.published = hook_.apply(own);
        if (!plugins::valid_tool_name(own) || !plugins::valid_tool_name(offered.published)) {
            spdlog::warn("upstream '{}': tool '{}' is left out: as '{}' its name is not 1-64 of letters, digits, "
                         "'_', '-', '.'",
                         entry.name, protocol::quoted_text(own, 200), protocol::quoted_text(offered.published, 200));
            continue;
        }
        gh_tool_desc& d = offered.desc;
        d.struct_size = sizeof(gh_tool_desc);
        d.flags = entry.gated ? 0 : GH_TOOL_GATE_EXEMPT;
        d.name = offer.keep(own);
        d.title = offer.keep(text_of(tool, "title"));
        d.description = offer.keep(text_of(tool, "description"));
        d.input_schema = offer.keep(schema_of(tool, "inputSchema"));
        d.output_schema = offer.keep(schema_of(tool, "outputSchema"));
        d.scope = offer.keep(entry.scope);
        d.required_scopes = offer.keep(required_scopes);
        const Json annotations = tool.value("annotations", Json::object());
        d.risk = entry.risk ? risk_named(*entry.risk) : risk_of(annotations);
        d.rules = offer.keep(entry.rules);
        d.annotations = offer.keep(passed_hints(annotations).dump());
        d.call = &UpstreamFamily::call_tool;
        d.task_support = GH_TASK_NONE;
        // The loader reads it as a plugin's, compiling its schemas once, and
        // leaves it out if it cannot serve it (a misplaced x-mcp-header too).
        if (auto schema = tool.find("inputSchema"); schema != tool.end() && schema->is_object()) try {
                if (auto headers = schema::find_param_headers(*schema); !headers.empty())
                    offer.param_headers.emplace(own, std::move(headers));
            } catch (const std::invalid_argument&) {
            }
        offer.tools.push_back(std::move(offered));
    }
    for (const auto* list : {&entry.allow, &entry.deny})
        for (const auto& name : *list)
            if (!seen.count(name))
                spdlog::warn("upstream '{}' names tool '{}' in {}, but the server offers no such tool", entry.name,
                             name, list == &entry.allow ? "allow" : "deny");
    for (auto& t : offer.tools) {
        t.desc.tool_data = &t;
        offer.tool_table.push_back(&t.desc);
    }
    offer.listed_tools.assign(seen.begin(), seen.end());
}

// Resources keep their URIs (a URI names one resource; a clash with another
// family's is refused at load) and templates theirs.
void UpstreamFamily::offer_resources(const Listing& listing, Offer& offer) const {
    const auto& family = options_.entry.name;
    const std::set<std::string> uris_twice = listed_twice(listing.resources, "uri");
    const std::set<std::string> templates_twice = listed_twice(listing.templates, "uriTemplate");
    for (const auto& twice : {&uris_twice, &templates_twice})
        for (const auto& text : *twice)
            spdlog::warn("upstream '{}' lists resource {} '{}' more than once; every copy is left out", family,
                         twice == &uris_twice ? "URI" : "template", protocol::quoted_text(text, 200));
    for (const auto& r : listing.resources) {
        const std::string* uri = text_at(r, "uri");
        if (!uri || uris_twice.count(*uri)) continue;
        auto& offered = offer.resources.emplace_back();
        gh_resource_desc& d = offered.desc;
        d.struct_size = sizeof(gh_resource_desc);
        d.uri = offer.keep(*uri);
        d.name = offer.keep(text_of(r, "name"));
        d.title = offer.keep(text_of(r, "title"));
        d.description = offer.keep(text_of(r, "description"));
        d.mime_type = offer.keep(text_of(r, "mimeType"));
        d.annotations = offer.keep(json_of(r, "annotations"));
        if (auto size = r.find("size"); size != r.end() && size->is_number_unsigned()) {
            d.flags = GH_RESOURCE_HAS_SIZE;
            d.size = size->get<std::uint64_t>();
        }
        d.read = &UpstreamFamily::read_resource;
        d.resource_data = const_cast<UpstreamFamily*>(this); // the family its reads go to
        try {
            plugins::read_resource_descriptor(&d, offer.resources.size() - 1);
        } catch (const std::exception& e) {
            spdlog::warn("upstream '{}': resource '{}' is left out: {}", family,
                         protocol::quoted_text(text_of(r, "uri"), 200), e.what());
            offer.resources.pop_back();
        }
    }
    for (const auto& t : listing.templates) {
        const std::string* uri_template = text_at(t, "uriTemplate");
        if (!uri_template || templates_twice.count(*uri_template)) continue;
        auto& offered = offer.templates.emplace_back();
        offered.uri_template = *uri_template;
        gh_resource_template_desc& d = offered.desc;
        d.struct_size = sizeof(gh_resource_template_desc);
        d.uri_template = offer.keep(offered.uri_template);
        d.name = offer.keep(text_of(t, "name"));
        d.title = offer.keep(text_of(t, "title"));
        d.description = offer.keep(text_of(t, "description"));
        d.mime_type = offer.keep(text_of(t, "mimeType"));
        d.annotations = offer.keep(json_of(t, "annotations"));
        d.read = &UpstreamFamily::read_resource;
        if (listing.completions) d.complete = &UpstreamFamily::complete_template;
        try {
            plugins::read_resource_template_descriptor(&d, offer.templates.size() - 1);
        } catch (const std::exception& e) {
            spdlog::warn("upstream '{}': resource template '{}' is left out: {}", family,
                         protocol::quoted_text(offered.uri_template, 200), e.what());
            offer.templates.pop_back();
        }
    }
    for (auto& r : offer.resources)
        offer.resource_table.push_back(&r.desc);
    for (auto& t : offer.templates) {
        t.desc.template_data = &t;
        offer.template_table.push_back(&t.desc);
    }
}

// Prompts are named by the hook, as tools are.
void UpstreamFamily::offer_prompts(const Listing& listing, Offer& offer) const {
    const std::vector<Json>& listed = listing.prompts;
    const auto& family = options_.entry.name;
    const std::set<std::string> twice = listed_twice(listed, "name");
    for (const auto& name : twice)
        spdlog::warn("upstream '{}' lists prompt '{}' more than once; every copy is left out", family,
                     protocol::quoted_text(name, 200));
    for (const auto& p : listed) {
        const std::string* name = text_at(p, "name");
        if (!name || twice.count(*name)) continue;
        auto& offered = offer.prompts.emplace_back();
        offered.own_name = *name;
        offered.published = hook_.apply(offered.own_name);
        gh_prompt_desc& d = offered.desc;
        d.struct_size = sizeof(gh_prompt_desc);
        d.name = offer.keep(offered.own_name);
        d.title = offer.keep(text_of(p, "title"));
        d.description = offer.keep(text_of(p, "description"));
        Json arguments = Json::array();
        if (auto list = p.find("arguments"); list != p.end() && list->is_array())
            for (const auto& a : *list)
                if (a.is_object()) {
                    Json kept = Json::object();
                    for (const char* key : {"name", "title", "description", "required"})
                        if (auto v = a.find(key); v != a.end()) kept[key] = *v;
                    arguments.push_back(std::move(kept));
                }
        d.arguments = offer.keep(arguments.dump());
        d.get = &UpstreamFamily::get_prompt;
        if (listing.completions) d.complete = &UpstreamFamily::complete_prompt;
        bool usable = plugins::valid_tool_name(offered.published);
        try {
            if (usable) plugins::read_prompt_descriptor(&d, offer.prompts.size() - 1, "");
        } catch (const std::exception& e) {
            spdlog::warn("upstream '{}': prompt '{}' is left out: {}", family,
                         protocol::quoted_text(offered.own_name, 200), e.what());
            usable = false;
        }
        if (!usable) {
            if (!plugins::valid_tool_name(offered.published))
                spdlog::warn("upstream '{}': prompt '{}' is left out: as '{}' its name is not 1-64 of letters, "
                             "digits, '_', '-', '.'",
                             family, protocol::quoted_text(offered.own_name, 200),
                             protocol::quoted_text(offered.published, 200));
            offer.prompts.pop_back();
        }
    }
    for (auto& p : offer.prompts) {
        p.desc.prompt_data = &p;
        offer.prompt_table.push_back(&p.desc);
    }
}

std::string UpstreamFamily::describe() const {
    const auto& entry = options_.entry;
    if (!entry.url.empty()) return shown_url(entry.url);
    std::string text;
    for (const auto& word : entry.command)
        text += (text.empty() ? "" : " ") + word;
    return text;
}

bool UpstreamFamily::serving() const {
    std::lock_guard lock(mutex_);
    return session_ != nullptr;
}

std::string UpstreamFamily::why_not_serving() const {
    std::lock_guard lock(mutex_);
    return down_because_;
}

// Watches the connection: when it ends, connects again after a backoff that
// doubles while attempts fail; re-lists when the server says its tools changed.
void UpstreamFamily::supervise() {
    auto connected_at = Clock::now();
    // A subscription the server ended is asked for again, at most once a
    // second, less often while they keep ending soon after they open.
    auto listen_backoff = kFirstListen;
    auto listened_at = Clock::now();
    auto listed_at = Clock::now() - kFewestRelists;
    std::unique_lock lock(mutex_);
    // The wait before the next attempt; each wait used doubles the next one.
    // A start that failed already waited the first.
    std::chrono::milliseconds backoff = session_ ? kFirstBackoff : doubled(kFirstBackoff);
    while (!stopping_) {
        changed_.wait_for(lock, kWatch);
        if (stopping_) break;
        lock.unlock();
        sweep_parked();
        lock.lock();
        if (session_ && session_->alive()) {
            if (session_->listening() == ClientSession::Listening::ended &&
                Clock::now() - listened_at >= listen_backoff) {
                listen_backoff =
                    Clock::now() - listened_at >= kLivedLongEnough ? kFirstListen : doubled(listen_backoff);
                listened_at = Clock::now();
                relist_ = true; // what changed while no one listened
                auto session = session_;
                lock.unlock();
                session->listen();
                lock.lock();
                if (stopping_) break;
            }
            // However often a server says its lists changed, it is listed at
            // most once a second: each listing makes a registry anew.
            if (!relist_ || Clock::now() - listed_at < kFewestRelists) continue;
            relist_ = false;
            listed_at = Clock::now();
            auto session = session_;
            lock.unlock();
            std::string failed;
            try {
                take_listing(*session);
            } catch (const std::exception& e) {
                failed = e.what();
            }
            lock.lock();
            // A listing cut short by retire() is no fault of the server's.
            if (!failed.empty() && !stopping_)
                spdlog::warn("upstream '{}' said its lists changed, but did not list them: {}", options_.entry.name,
                             failed);
            continue;
        }
        if (session_) {
            down_because_ = session_->why_closed();
            auto gone = std::move(session_);
            const bool lived_long = Clock::now() - connected_at >= kLivedLongEnough;
            if (lived_long) backoff = kFirstBackoff;
            next_attempt_ = Clock::now() + backoff;
            spdlog::error("upstream '{}' ({}) stopped serving: {}; connecting again in {} ms", options_.entry.name,
                          describe(), protocol::quoted_text(down_because_, 1024),
                          std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
            // A server that ends soon after each connection (answers its
            // listings, then exits) waits longer each time, as one that cannot
            // be reached does: every connection re-lists, and a changed
            // listing is a new registry and a list_changed to every agent.
            backoff = doubled(backoff);
            lock.unlock();
            gone->close();
            lock.lock();
            continue;
        }
        if (Clock::now() < next_attempt_) continue;
        lock.unlock();
        std::shared_ptr<ClientSession> session;
        std::shared_ptr<const Offer> listed;
        std::string why;
        try {
            session = connect();
            listed = make_offer(list(*session));
        } catch (const std::exception& e) {
            why = e.what();
            if (session) session->close();
            session.reset();
        }
        lock.lock();
        connecting_.reset();
        if (stopping_) {
            if (session) {
                lock.unlock();
                session->close();
                lock.lock();
            }
            break;
        }
        if (session) {
            spdlog::info("upstream '{}' serves {}({})", options_.entry.name, down_because_.empty() ? "" : "again ",
                         session->protocol_version());
            protocol_version_ = session->protocol_version();
            session_ = std::move(session);
            down_because_.clear();
            connected_at = listened_at = Clock::now();
            // Only now is what it lists served: a call of a tool it brought
            // finds the connection that can carry it.
            lock.unlock();
            adopt(std::move(listed));
            lock.lock();
        } else {
            down_because_ = why;
            next_attempt_ = Clock::now() + backoff;
            spdlog::warn("upstream '{}' could not be reached again: {}; next attempt in {} ms", options_.entry.name,
                         why, backoff.count());
            backoff = doubled(backoff);
        }
    }
}

// What the server lists now becomes the offer; the host hears of it only
// when something in it changed.
void UpstreamFamily::take_listing(ClientSession& session) {
    adopt(make_offer(list(session)));
}

void UpstreamFamily::adopt(std::shared_ptr<const Offer> next) {
    std::function<void()> heard;
    std::shared_ptr<const Offer> served;
    {
        std::lock_guard lock(mutex_);
        if (retired_ || (offer_ && offer_->listed == next->listed)) return;
        served = std::exchange(offer_, std::move(next));
        heard = on_offer_changed_;
    }
    spdlog::info("upstream '{}' lists {} tool(s) now", options_.entry.name, offer()->tools.size());
    if (!heard) return;
    // The host reads the new offer as it reads a plugin's descriptor, and may
    // refuse it (a name the hook makes clash with another family's): then
    // what it serves stays as it was, and so does the offer calls are checked
    // against. Thrown on from here, it would end the supervisor's thread, and
    // with it the host.
    try {
        heard();
    } catch (const std::exception& e) {
        {
            std::lock_guard lock(mutex_);
            offer_ = std::move(served);
        }
        spdlog::error("upstream '{}': its new listing is not served: {}", options_.entry.name, e.what());
    }
}

int32_t UpstreamFamily::unavailable(gh_sink* out, const std::string& why, bool reached) const {
    const std::int64_t retry_ms = retry_after_ms();
    const auto& name = options_.entry.name;
    const std::string message =
        reached ? "The upstream server of family '" + name + "' stopped answering during this call (" + why +
                      "), so whether it took effect is unknown; the host is connecting to it again. Try again shortly."
                : "The upstream server of family '" + name + "' is not reachable right now (" + why +
                      "), so the call did not run; the host is connecting to it again. Try again in " +
                      std::to_string(retry_ms + 100) + " ms.";
    const Json refusal = {{"code", gate::refusal_code::upstream_unavailable},
                          {"message", message},
                          {"next", {{"action", "retry"}, {"retryAfterMs", retry_ms + 100}}}};
    out->bytes = refusal.dump();
    return GH_STATUS_REFUSED;
}

int32_t UpstreamFamily::call_tool(void* state, void* tool_data, gh_call* call, gh_str arguments, gh_sink* out) {
    return static_cast<UpstreamFamily*>(state)->call(*static_cast<const OfferedTool*>(tool_data), call, arguments, out);
}

int32_t UpstreamFamily::call(const OfferedTool& tool, gh_call* call, gh_str arguments, gh_sink* out) {
    {
        std::lock_guard lock(mutex_);
        if (session_ && !std::binary_search(offer_->listed_tools.begin(), offer_->listed_tools.end(), tool.own_name)) {
            out->bytes = "The upstream server of family '" + options_.entry.name + "' no longer offers tool '" +
                         tool.own_name + "'.";
            return GH_STATUS_TOOL_ERROR;
        }
    }
    Json params = {{"name", tool.own_name}, {"arguments", object_of(arguments)}};
    Json result;
    if (const int32_t status = ask(call, "tools/call", std::move(params), "tool '" + tool.own_name + "'", result, out);
        status != GH_STATUS_OK)
        return status;
    if (const auto type = protocol::text_member(result, "resultType", "complete"); type != "complete") {
        out->bytes = "The upstream server of family '" + options_.entry.name + "' answered tool '" + tool.own_name +
                     "' with a result of type '" + type.substr(0, 40) + "', which this host does not relay.";
        return GH_STATUS_TOOL_ERROR;
    }
    // Only what a CallToolResult carries for the agent; the result checks
    // (its schema, the tool's outputSchema) come after. This family runs in
    // the host, so the result goes to them as JSON, not as text to parse again.
    Json answer = Json::object();
    for (const char* key : {"content", "structuredContent", "isError"})
        if (auto it = result.find(key); it != result.end()) answer[key] = std::move(*it);
    out->value = std::move(answer);
    return GH_STATUS_OK;
}

// One request upstream on the calling thread, with the call's progress and
// cancellation; GH_STATUS_OK and `result`, or the status and sentence the
// host answers with. With `relays`, what the server asks of the agent meanwhile
// goes back as GH_STATUS_INPUT_REQUIRED: the host asks the agent in its own
// revision's way (multi round-trip) and calls again with the answers, which
// this round's state leads to the request still open upstream (a 2025-11-25
// server) or to the server's own requestState (a 2026-07-28 one).
int32_t UpstreamFamily::ask(gh_call* call, const std::string& method, Json params, const std::string& what,
                            Json& result, gh_sink* out, bool relays) {
    const gh_host_api* api = plugins::host_api();
    ClientSession::Waiting waiting;
    // The host's deadline cancels the call first; this only bounds the wait past it.
    waiting.timeout = options_.tool_timeout + 5s;
    waiting.cancelled = [&] { return api->is_cancelled(call) != 0; };
    waiting.progress = [&](const Json& progress) {
        const auto number = [&](const char* key) {
            const auto it = progress.find(key);
            return it != progress.end() && it->is_number() ? it->get<double>() : 0.0;
        };
        const std::string message = text_of(progress, "message");
        api->progress(call, number("progress"), number("total"), gh_str{message.data(), message.size()});
    };
    waiting.relays = relays;
    static const Json kNone = Json::object();
    const Json* agent_capabilities = &kNone;
    // Read from the call itself: this family runs in the host, so it need
    // not build the context's JSON only to parse it again.
    const plugins::CallEnvironment* environment = call ? call->environment : nullptr;
    // Whose request it is: over stdio an ask goes to no other owner's call.
    const std::string owner = environment ? environment->owner() : std::string();
    waiting.owner = owner;
    Json state; // this round's: {"parked": handle} or {"upstream": the server's requestState}
    if (relays) {
        if (environment)
            if (const Json* caps = environment->client_capabilities(); caps && caps->is_object())
                agent_capabilities = caps;
        if (const gh_str sealed = api->request_state(call); sealed.len)
            state = Json::parse(std::string_view(sealed.ptr, sealed.len), nullptr, false);
        // A 2026-07-28 server hears of what the agent can answer, and only that.
        waiting.capabilities = Json::object();
        for (const char* key : {"elicitation", "sampling", "roots"})
            if (auto c = agent_capabilities->find(key); c != agent_capabilities->end() && c->is_object())
                waiting.capabilities[key] = *c;
    }
    std::shared_ptr<ClientSession> session;
    ClientSession::Reply reply;
    try {
        if (state.is_object() && state["parked"].is_string()) {
            Parked parked;
            {
                std::lock_guard lock(mutex_);
                auto it = parked_.find(state["parked"].get<std::string>());
                if (it == parked_.end() || it->second.owner != owner) {
                    out->bytes = "The upstream call of family '" + options_.entry.name + "' that asked for input (" +
                                 what + ") no longer waits here: it waited past " +
                                 std::to_string(options_.input_wait.count()) +
                                 " ms, its server's connection ended, or another instance of the host holds it. Call "
                                 "again without requestState and inputResponses to start over.";
                    return GH_STATUS_TOOL_ERROR;
                }
                parked = std::move(it->second);
                parked_.erase(it);
            }
            session = parked.session;
            const Json responses = object_of(api->input_responses(call));
            for (auto it = parked.asked.begin(); it != parked.asked.end();) {
                auto given = responses.find(it->first);
                if (given == responses.end() || !given->is_object()) {
                    ++it;
                    continue;
                }
                session->answer(it->second, *given);
                parked.requests.erase(it->first);
                it = parked.asked.erase(it);
            }
            if (!parked.asked.empty()) return park(std::move(parked), out); // what is still unanswered, again
            reply = session->resume(parked.request, waiting);
        } else {
            {
                std::lock_guard lock(mutex_);
                session = session_;
            }
            if (!session) return unavailable(out, why_not_serving(), false);
            // A retry of a 2026-07-28 server's InputRequiredResult: the
            // answers, and its own state when it kept one.
            if (state.is_object() && state.contains("upstream")) {
                if (state["upstream"].is_string()) params["requestState"] = state["upstream"];
                params["inputResponses"] = object_of(api->input_responses(call));
            }
            reply = session->call(method, std::move(params), waiting);
        }
        unsigned refused_rounds = 0;
        while (!reply.asked.empty()) {
            Parked parked;
            parked.session = session;
            parked.request = reply.id;
            parked.owner = owner;
            for (auto& asked : reply.asked) {
                // The server hears no at once where the agent's client cannot
                // answer (the params' text is the session's own dump).
                const Json ask = {{"ask", {{"method", asked.method}, {"params", Json::parse(asked.params)}}}};
                if (const Json missing = mrtr::missing_capabilities(ask, *agent_capabilities); !missing.empty()) {
                    session->refuse(asked.id, kMethodNotFound,
                                    "the agent's client does not offer " + missing.dump() + " for " + asked.method);
                    continue;
                }
                const std::string key = "upstream-" + std::to_string(parked.asked.size() + 1);
                parked.asked.emplace(key, asked.id);
                parked.requests[key] =
                    R"({"method":)" + Json(asked.method).dump() + R"(,"params":)" + asked.params + "}";
            }
            if (!parked.asked.empty()) return park(std::move(parked), out);
            // Each resume waits anew: a server that asks again and again
            // what the agent's client cannot answer would hold the call (and
            // its thread) past its timeout.
            if (++refused_rounds >= kMaxRefusedRounds) {
                session->abandon(reply.id, "it kept asking for input the agent's client cannot give");
                out->bytes = "The upstream server of family '" + options_.entry.name + "' asked " +
                             std::to_string(kMaxRefusedRounds) + " times during " + what +
                             " for input the agent's client does not offer (" + reply.asked.front().method +
                             "); the host ended the call.";
                return GH_STATUS_TOOL_ERROR;
            }
            reply = session->resume(reply.id, waiting);
        }
    } catch (const RequestCancelled&) {
        return GH_STATUS_CANCELLED;
    } catch (const UpstreamUnavailable& e) {
        return unavailable(out, e.what(), true);
    } catch (const UpstreamError& e) {
        // The host's own transport could not carry it (a proxy's 503, no
        // token to send): an outage to the agent, not the server's answer.
        if (ClientTransport::refused_here(e.data)) return unavailable(out, e.what(), true);
        if (e.code == kResourceNotFound && method == "resources/read") return GH_STATUS_NOT_FOUND;
        out->bytes = "The upstream server of family '" + options_.entry.name + "' refused " + what + ": " + e.what() +
                     " (JSON-RPC error " + std::to_string(e.code) + ").";
        return GH_STATUS_TOOL_ERROR;
    }
    result = std::move(reply.result);
    if (relays && protocol::text_member(result, "resultType") == "input_required")
        return pass_on_input_required(result, what, out);
    return GH_STATUS_OK;
}

// Keeps an open upstream call for the agent's next round, and asks the agent.
int32_t UpstreamFamily::park(Parked parked, gh_sink* out) {
    parked.expires = Clock::now() + options_.input_wait;
    std::string requests = "{";
    for (const auto& [key, request] : parked.requests) {
        if (requests.size() > 1) requests += ',';
        requests += Json(key).dump() + ':' + request;
    }
    requests += '}';
    parked.bytes = requests.size();
    const std::string handle = new_handle();
    const std::size_t most_bytes = kParkedMessages * options_.max_message_bytes;
    const std::size_t most_bytes_mine = kParkedMessagesPerOwner * options_.max_message_bytes;
    std::string full;
    {
        std::lock_guard lock(mutex_);
        std::size_t mine = 0, bytes = 0, bytes_mine = 0;
        for (const auto& [_, held] : parked_) {
            bytes += held.bytes;
            if (held.owner == parked.owner) {
                ++mine;
                bytes_mine += held.bytes;
            }
        }
        if (parked_.size() >= kMaxParked)
            full = std::to_string(kMaxParked) + " calls of family '" + options_.entry.name + "' wait for answers";
        else if (mine >= kMaxParkedPerOwner)
            full = "this principal has " + std::to_string(kMaxParkedPerOwner) + " calls of family '" +
                   options_.entry.name + "' waiting for answers";
        else if (bytes + parked.bytes > most_bytes)
            full = "the calls of family '" + options_.entry.name + "' that wait for answers hold " +
                   std::to_string(bytes) + " bytes of asks, and " + std::to_string(parked.bytes) +
                   " more would pass the " + std::to_string(most_bytes) + " it keeps";
        else if (bytes_mine + parked.bytes > most_bytes_mine)
            full = "this principal's calls of family '" + options_.entry.name + "' that wait for answers hold " +
                   std::to_string(bytes_mine) + " bytes of asks, and " + std::to_string(parked.bytes) +
                   " more would pass the " + std::to_string(most_bytes_mine) + " it keeps for one principal";
        else
            parked_.emplace(handle, std::move(parked));
    }
    if (!full.empty()) {
        std::vector<Parked> ended;
        ended.push_back(std::move(parked));
        end_parked(std::move(ended), "the host cannot keep the call open: " + full);
        out->bytes = "The upstream server asked for input, and the host cannot keep one more call open for the "
                     "answers: " +
                     full + ". Answer those first, or wait for them to end.";
        return GH_STATUS_TOOL_ERROR;
    }
    out->bytes = R"({"inputRequests":)" + std::move(requests) + R"(,"requestState":)" +
                 Json(Json{{"parked", handle}}.dump()).dump() + "}";
    return GH_STATUS_INPUT_REQUIRED;
}

// A 2026-07-28 server's InputRequiredResult, passed on: its requests as they
// are, its requestState inside this host's (which the host seals again).
int32_t UpstreamFamily::pass_on_input_required(const Json& result, const std::string& what, gh_sink* out) const {
    const auto refuse = [&](const std::string& why) {
        complaints_.write(spdlog::level::warn, "asked for input for " + what + " that cannot be relayed: " + why);
        out->bytes = "The upstream server of family '" + options_.entry.name + "' asked for input for " + what +
                     " that the host cannot relay: " + why + ".";
        return GH_STATUS_TOOL_ERROR;
    };
    Json requests = Json::object();
    if (auto listed = result.find("inputRequests"); listed != result.end()) {
        if (!listed->is_object()) return refuse("its inputRequests is not an object");
        if (listed->size() > ClientSession::kMaxAsked)
            return refuse("it asks for more than " + std::to_string(ClientSession::kMaxAsked) + " inputs at once");
        for (const auto& [key, request] : listed->items()) {
            if (key.empty() || !request.is_object() || !relayed_method(request.value("method", Json())))
                return refuse("input request '" + protocol::quoted_text(key, 64) +
                              "' is not one of elicitation/create, sampling/createMessage, roots/list");
            const Json params = request.value("params", Json::object());
            if (!params.is_object())
                return refuse("the params of input request '" + protocol::quoted_text(key, 64) + "' are not an object");
            requests[key] = {{"method", request["method"]}, {"params", params}};
        }
    }
    // The host's state always names the upstream (null when the server kept
    // none), so the retry carries the answers back to it either way.
    Json own_state;
    if (auto own = result.find("requestState"); own != result.end()) {
        if (!own->is_string()) return refuse("its requestState is not a string");
        own_state = *own;
    }
    if (requests.empty() && own_state.is_null()) return refuse("it asks for nothing and keeps no state");
    const std::size_t own_bytes = own_state.is_string() ? own_state.get_ref<const std::string&>().size() : 0;
    const std::string state = Json{{"upstream", std::move(own_state)}}.dump();
    if (state.size() > kMaxStateBytes)
        return refuse("its requestState is " + std::to_string(own_bytes) + " bytes, and a round carries at most " +
                      std::to_string(kMaxStateBytes) + " with the host's own");
    Json answer = {{"inputRequests", std::move(requests)}, {"requestState", state}};
    out->bytes = answer.dump();
    return GH_STATUS_INPUT_REQUIRED;
}

void UpstreamFamily::drop_round(std::string_view state, const std::string& owner, const std::string& reason) {
    const Json parsed = Json::parse(state, nullptr, false);
    if (!parsed.is_object()) return;
    const auto handle = parsed.find("parked"); // a 2026-07-28 server's state ({"upstream": …}) holds no call open
    if (handle == parsed.end() || !handle->is_string()) return;
    std::vector<Parked> ended;
    {
        std::lock_guard lock(mutex_);
        auto it = parked_.find(handle->get<std::string>());
        if (it == parked_.end() || it->second.owner != owner) return;
        ended.push_back(std::move(it->second));
        parked_.erase(it);
    }
    end_parked(std::move(ended), reason);
}

void UpstreamFamily::end_parked(std::vector<Parked> ended, const std::string& reason) {
    for (auto& parked : ended) {
        for (const auto& [_, id] : parked.asked)
            parked.session->refuse(id, -32603, reason);
        parked.session->abandon(parked.request, reason);
    }
}

// Calls whose agent did not come back in time are ended upstream; those
// whose server's connection ended go at once, not at their time: they hold
// their principal's places and bytes, and the connection that is gone.
void UpstreamFamily::sweep_parked() {
    // Taken out under the lock and let go after it: the last reference to a
    // dead connection's session may be among them, and ending it joins its
    // threads.
    std::vector<Parked> expired, orphaned;
    {
        std::lock_guard lock(mutex_);
        const auto now = Clock::now();
        for (auto it = parked_.begin(); it != parked_.end();) {
            if (!it->second.session->alive())
                orphaned.push_back(std::move(it->second));
            else if (it->second.expires <= now)
                expired.push_back(std::move(it->second));
            else {
                ++it;
                continue;
            }
            it = parked_.erase(it);
        }
    }
    if (!orphaned.empty())
        spdlog::info("upstream '{}': {} call(s) that asked for input lost their server's connection; ended",
                     options_.entry.name, orphaned.size());
    if (expired.empty()) return;
    spdlog::info("upstream '{}': {} call(s) that asked for input were not answered within {} ms; ended",
                 options_.entry.name, expired.size(), options_.input_wait.count());
    end_parked(std::move(expired),
               "the agent did not answer within " + std::to_string(options_.input_wait.count()) + " ms");
}

int32_t UpstreamFamily::read_resource(void* state, void*, gh_call* call, gh_str uri, gh_str, gh_sink* out) {
    auto& self = *static_cast<UpstreamFamily*>(state);
    const std::string address(uri.ptr, uri.len);
    Json result;
    if (const int32_t status =
            self.ask(call, "resources/read", {{"uri", address}}, "the read of '" + address + "'", result, out);
        status != GH_STATUS_OK)
        return status;
    Json answer = {{"contents", result.value("contents", Json::array())}};
    out->bytes = answer.dump();
    return GH_STATUS_OK;
}

int32_t UpstreamFamily::get_prompt(void* state, void* data, gh_call* call, gh_str arguments, gh_sink* out) {
    auto& self = *static_cast<UpstreamFamily*>(state);
    const auto& prompt = *static_cast<const OfferedPrompt*>(data);
    Json result;
    if (const int32_t status =
            self.ask(call, "prompts/get", {{"name", prompt.own_name}, {"arguments", object_of(arguments)}},
                     "prompt '" + prompt.own_name + "'", result, out);
        status != GH_STATUS_OK)
        return status;
    Json answer = {{"messages", result.value("messages", Json::array())}};
    if (auto d = result.find("description"); d != result.end() && d->is_string()) answer["description"] = *d;
    out->bytes = answer.dump();
    return GH_STATUS_OK;
}

int32_t UpstreamFamily::complete(gh_call* call, Json ref, gh_str argument, gh_str value, gh_str context, gh_sink* out) {
    Json params = {{"ref", std::move(ref)},
                   {"argument",
                    {{"name", std::string(argument.ptr, argument.len)}, {"value", std::string(value.ptr, value.len)}}}};
    if (Json resolved = object_of(context); !resolved.empty()) params["context"] = {{"arguments", std::move(resolved)}};
    Json result;
    if (const int32_t status = ask(call, "completion/complete", std::move(params), "a completion", result, out, false);
        status != GH_STATUS_OK)
        return status;
    Json completion = result.value("completion", Json::object());
    if (!completion.is_object() || !completion["values"].is_array()) completion = {{"values", Json::array()}};
    Json answer = {{"values", completion["values"]}};
    for (const char* key : {"total", "hasMore"})
        if (auto it = completion.find(key); it != completion.end()) answer[key] = *it;
    out->bytes = answer.dump();
    return GH_STATUS_OK;
}

int32_t UpstreamFamily::complete_prompt(void* state, void* data, gh_call* call, gh_str argument, gh_str value,
                                        gh_str context, gh_sink* out) {
    const auto& prompt = *static_cast<const OfferedPrompt*>(data);
    return static_cast<UpstreamFamily*>(state)->complete(call, {{"type", "ref/prompt"}, {"name", prompt.own_name}},
                                                         argument, value, context, out);
}

int32_t UpstreamFamily::complete_template(void* state, void* data, gh_call* call, gh_str argument, gh_str value,
                                          gh_str context, gh_sink* out) {
    const auto& offered = *static_cast<const OfferedTemplate*>(data);
    return static_cast<UpstreamFamily*>(state)->complete(
        call, {{"type", "ref/resource"}, {"uri", offered.uri_template}}, argument, value, context, out);
}

} // namespace gatehouse::upstream
