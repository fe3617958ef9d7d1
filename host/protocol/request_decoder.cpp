#include "protocol/request_decoder.hpp"

#include "mrtr/state_keys.hpp"
#include "protocol/log_level.hpp"
#include "protocol/tool_call.hpp"
#include "protocol/utf8_text.hpp"

#include <string_view>

namespace gatehouse::protocol {

// Keys looked up by length, not measured with strlen at every member compared.
using namespace std::string_view_literals;

namespace {

bool valid_id(const Json& id) {
    return id.is_string() || id.is_number_integer();
}

std::string supported_list() {
    std::string out;
    for (auto v : kSupportedVersions)
        out += (out.empty() ? "" : ", ") + std::string(v);
    return out;
}

Incoming invalid(const Json& id, std::string sentence) {
    Incoming in;
    in.error = make_error(id, error_code::invalid_request, std::move(sentence));
    return in;
}

} // namespace

Json supported_versions() {
    Json out = Json::array();
    for (auto v : kSupportedVersions)
        out.push_back(std::string(v));
    return out;
}

std::string echoed_name(const std::string& name) {
    constexpr std::size_t kMaxEchoed = 64;
    return cut_utf8(name, kMaxEchoed, " (" + std::to_string(name.size()) + " bytes)");
}

namespace {

std::optional<metrics::Traceparent> parse_traceparent_or_none(std::string_view text) {
    if (text.empty()) return std::nullopt;
    return metrics::parse_traceparent(text);
}

} // namespace

namespace {

// The members of a message's envelope, found in one pass over it.
struct Envelope {
    Json* jsonrpc = nullptr;
    Json* id = nullptr;
    Json* method = nullptr;
    Json* params = nullptr;
    bool has_result = false;
    bool has_error = false;

    explicit Envelope(Json& message) {
        using namespace std::string_view_literals;
        for (auto& [name, value] : message.get_ref<Json::object_t&>()) {
            if (name == "jsonrpc"sv)
                jsonrpc = &value;
            else if (name == "id"sv)
                id = &value;
            else if (name == "method"sv)
                method = &value;
            else if (name == "params"sv)
                params = &value;
            else if (name == "result"sv)
                has_result = true;
            else if (name == "error"sv)
                has_error = true;
        }
    }
};

} // namespace

Incoming RequestDecoder::read(Connection& connection, const auth::Principal& sender, Json&& message,
                              TransportTrace transport_trace) const {
    if (message.is_array())
        return invalid(nullptr, "JSON-RPC batches are not supported by MCP; send one message per line.");
    if (!message.is_object()) return invalid(nullptr, "A JSON-RPC message must be a JSON object.");
    const Envelope envelope(message);
    const Json id = envelope.id && valid_id(*envelope.id) ? *envelope.id : Json();
    if (!envelope.jsonrpc || !envelope.jsonrpc->is_string() ||
        envelope.jsonrpc->get_ref<const std::string&>() != std::string_view("2.0"))
        return invalid(id, "The message must carry \"jsonrpc\": \"2.0\".");
    if (!envelope.method) {
        if (envelope.id && envelope.has_result != envelope.has_error) {
            // A response to what a request asked the client (2025-11-25).
            Incoming in;
            in.kind = Incoming::Kind::response;
            in.message = std::move(message);
            return in;
        }
        // Neither request, notification nor response: an answer is the only
        // way the sender learns it was dropped.
        return invalid(id, envelope.has_result || envelope.has_error
                               ? "A response carries an \"id\" and exactly one of \"result\" and \"error\"."
                               : "The message has no \"method\".");
    }
    if (!envelope.method->is_string()) return invalid(id, "\"method\" must be a string.");
    if (!envelope.id) {
        Incoming in;
        in.kind = Incoming::Kind::notification;
        in.message = std::move(message);
        return in;
    }
    if (!valid_id(*envelope.id))
        return invalid(nullptr, "A request id must be a string or an integer (and never null).");
    Incoming in;
    in.kind = Incoming::Kind::request;
    in.request.principal = sender;
    in.request.received = std::chrono::steady_clock::now();
    in.request.received_at = std::chrono::system_clock::now();
    if (trace_ids_) {
        const Json* meta = nullptr;
        if (envelope.params && envelope.params->is_object())
            if (auto m = envelope.params->find("_meta"sv); m != envelope.params->end() && m->is_object()) meta = &*m;
        start_trace(meta, transport_trace, in.request);
    }
    try {
        decode(connection, *envelope.id, *envelope.method, envelope.params, in.request);
    } catch (const ProtocolError& e) {
        in.error = make_error(id, e.code(), e.what(), e.data());
        in.rejected = true;
    }
    // Resolved even when the rest failed to decode: a transport checks the
    // tool's headers and scope before it answers either error.
    if (in.request.method == std::string_view("tools/call")) try {
            in.request.call = target(in.request.params, in.request.principal);
        } catch (const ProtocolError& e) {
            if (in.error.is_null()) in.error = make_error(id, e.code(), e.what(), e.data());
        }
    return in;
}

const plugins::Tool* RequestDecoder::resolve(const plugins::ToolRegistry& registry, std::string_view name) const {
    if (const plugins::Tool* tool = registry.find(name)) return tool;
    return disclosure_.meta_tool(name);
}

ToolTarget RequestDecoder::target(Json& params, const auth::Principal& principal) const {
    auto name_it = params.find("name"sv);
    if (name_it == params.end() || !name_it->is_string())
        throw ProtocolError(error_code::invalid_params, "tools/call needs params.name, the tool's name as a string");
    const std::string& name = name_it->get_ref<const std::string&>();
    auto registry = registry_.current();
    const plugins::Tool* tool = resolve(*registry, name);
    if (!tool) {
        if (auto waiting = plugins::upstream_waiting_for(*registry, name))
            throw ProtocolError(error_code::invalid_params,
                                "Unknown tool: '" + echoed_name(name) + "'; it may be one of upstream family '" +
                                    waiting->family + "', whose server is not reachable yet (" + waiting->why +
                                    "), so its tools are not listed. Try again in " +
                                    std::to_string(waiting->retry_after_ms) + " ms.",
                                {{"code", gate::refusal_code::upstream_unavailable},
                                 {"family", waiting->family},
                                 {"next", {{"action", "retry"}, {"retryAfterMs", waiting->retry_after_ms}}}});
        throw ProtocolError(error_code::invalid_params,
                            "Unknown tool: '" + echoed_name(name) + "'; tools/list names the tools");
    }
    Json arguments; // null: target_of makes it the empty object
    if (auto a = params.find("arguments"sv); a != params.end() && !a->is_null()) {
        if (!a->is_object())
            throw ProtocolError(error_code::invalid_params, "tools/call params.arguments must be a JSON object");
        arguments = std::move(*a);
    }
    return target_of(std::move(registry), *tool, std::move(arguments), principal);
}

ToolTarget RequestDecoder::target_of(std::shared_ptr<const plugins::ToolRegistry> registry, const plugins::Tool& tool,
                                     Json arguments, const auth::Principal& principal) const {
    ToolTarget t{std::move(registry), &tool, arguments.is_null() ? Json::object() : std::move(arguments), nullptr,
                 scope_refusal(tool, principal)};
    // call_tool waits for its place and times out as the tool it forwards to.
    if (!tool.plugin && tool.name == ToolDisclosure::kCallTool)
        if (auto forwarded = t.arguments.find("name"sv); forwarded != t.arguments.end() && forwarded->is_string())
            t.forwarded = resolve(*t.registry, forwarded->get_ref<const std::string&>());
    return t;
}

void RequestDecoder::start_trace(const Json* meta, TransportTrace transport_trace, Request& r) const {
    const auto text = [meta](const char* key) -> std::string_view {
        if (!meta) return {};
        auto it = meta->find(key);
        if (it == meta->end() || !it->is_string()) return {};
        return it->get_ref<const std::string&>();
    };
    std::string_view traceparent = text("traceparent");
    std::string_view tracestate = text("tracestate");
    auto parent = parse_traceparent_or_none(traceparent);
    if (!parent) {
        traceparent = transport_trace.traceparent;
        tracestate = transport_trace.tracestate;
        parent = parse_traceparent_or_none(traceparent);
    }
    std::string state;
    if (parent)
        if (auto checked = metrics::checked_tracestate(tracestate)) state = std::move(*checked);
    r.trace = trace_ids_->start(parent, std::move(state));
}

namespace {

// The members of a request's _meta the decoder reads, found in one pass.
struct MetaMembers {
    const Json* version = nullptr;
    Json* client_capabilities = nullptr;
    const Json* log_level = nullptr;
    const Json* progress_token = nullptr;

    explicit MetaMembers(Json* meta) {
        if (!meta) return;
        for (auto& [name, value] : meta->get_ref<Json::object_t&>()) {
            if (name == meta_key::protocol_version)
                version = &value;
            else if (name == meta_key::client_capabilities)
                client_capabilities = &value;
            else if (name == meta_key::log_level)
                log_level = &value;
            else if (name == std::string_view("progressToken"))
                progress_token = &value;
        }
    }
};

} // namespace

void RequestDecoder::decode(Connection& connection, Json& id, Json& method, Json* params, Request& r) const {
    r.id = std::move(id);
    r.method = std::move(method.get_ref<std::string&>());
    r.connection = &connection;
    r.host = host_;
    if (params && !params->is_null()) {
        if (!params->is_object()) throw ProtocolError(error_code::invalid_params, "params must be a JSON object.");
        r.params = std::move(*params);
    }
    Json* meta = nullptr;
    if (auto m = r.params.find("_meta"sv); m != r.params.end()) {
        if (!m->is_object()) throw ProtocolError(error_code::invalid_params, "params._meta must be a JSON object.");
        meta = &*m;
    }
    const MetaMembers members(meta);
    const Json* version = members.version;

    if (version) {
        if (!version->is_string())
            throw ProtocolError(error_code::invalid_params, std::string("_meta[\"") +
                                                                std::string(meta_key::protocol_version) +
                                                                "\"] must be a string.");
        const auto& requested = version->get_ref<const std::string&>();
        if (requested == kModernVersion) {
            r.revision = Revision::modern_2026_07_28;
        } else if (requested == kLegacyVersion) {
            // A version this host supports, so not -32022: a client would
            // pick it again from `supported` and retry for ever. What is
            // missing is the revision's handshake; the error of that era
            // (Invalid Request) is what sends a dual-era client to initialize.
            if (!connection.legacy_initialized)
                throw ProtocolError(error_code::invalid_request,
                                    "Protocol version " + requested +
                                        " starts with initialize: call initialize first, then send this request "
                                        "again (or send it as " +
                                        std::string(kModernVersion) + ", which needs no handshake).");
            r.revision = Revision::legacy_2025_11_25;
        } else {
            throw ProtocolError(error_code::unsupported_protocol_version,
                                "Unsupported protocol version '" + requested + "' (supported: " + supported_list() +
                                    "; " + std::string(kLegacyVersion) + " starts with initialize)",
                                {{"supported", supported_versions()}, {"requested", requested}});
        }
    } else if (r.method == "initialize" || connection.legacy_initialized || r.method == "ping") {
        r.revision = Revision::legacy_2025_11_25;
    } else {
        throw ProtocolError(error_code::invalid_params,
                            std::string("The request has no _meta[\"") + std::string(meta_key::protocol_version) +
                                "\"]: send it on every request (" + std::string(kModernVersion) +
                                "), or call initialize first (" + std::string(kLegacyVersion) + ").");
    }

    if (r.revision == Revision::modern_2026_07_28) {
        Json* caps = members.client_capabilities;
        if (!caps || !caps->is_object())
            throw ProtocolError(error_code::invalid_params,
                                std::string("The request has no _meta[\"") +
                                    std::string(meta_key::client_capabilities) +
                                    "\"] object; send {} when the client declares no capabilities.");
        // Taken, not copied (a client's capabilities are a tree of their
        // own): nothing reads them from params after the decode.
        r.client_capabilities = std::move(*caps);
        if (const Json* level = members.log_level) {
            std::optional<int> parsed = level->is_string() ? parse_log_level(level->get<std::string>()) : std::nullopt;
            if (!parsed)
                throw ProtocolError(error_code::invalid_params,
                                    std::string("_meta[\"") + std::string(meta_key::log_level) +
                                        "\"] must be one of debug, info, notice, warning, error, critical, alert, "
                                        "emergency.");
            r.log_level = parsed;
        }
    } else {
        const int level = connection.legacy_log_level.load();
        if (level >= 0) r.log_level = level;
        std::lock_guard lock(connection.legacy_mutex);
        r.client_capabilities = connection.legacy_client_capabilities;
    }
    if (const Json* token = members.progress_token) {
        if (!token->is_string() && !token->is_number_integer())
            throw ProtocolError(error_code::invalid_params, "_meta.progressToken must be a string or an integer.");
        r.progress_token = *token;
    }
}

} // namespace gatehouse::protocol
