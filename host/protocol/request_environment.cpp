#include "protocol/request_environment.hpp"

#include "gate/refusal.hpp"
#include "protocol/log_level.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::protocol {

void check_family(const gate::GatePipeline& gate, const std::string& family, std::string_view what) {
    if (auto refusal = gate.check_family(family, what))
        throw ProtocolError(error_code::internal_error, refusal->message,
                            {{"code", refusal->code}, {"next", std::move(refusal->next)}});
}

RequestEnvironment::RequestEnvironment(Request& request, std::string family, Json subject)
    : request_(request), family_(std::move(family)), subject_(std::move(subject)) {}

bool RequestEnvironment::cancelled() const {
    return request_.cancelled();
}

void RequestEnvironment::log(int32_t level, std::string_view logger, std::string_view message) {
    if (!request_.log_level || level < *request_.log_level || request_.cancelled()) return;
    request_.reply->send(make_notification(
        "notifications/message",
        {{"level", log_level_name(level)}, {"logger", std::string(logger)}, {"data", std::string(message)}}));
}

void RequestEnvironment::progress(double done, double total, std::string_view message) {
    if (request_.progress_token.is_null() || request_.cancelled()) return;
    Json params = {{"progressToken", request_.progress_token}, {"progress", done}};
    if (total > 0) params["total"] = total;
    if (!message.empty()) params["message"] = std::string(message);
    request_.reply->send(make_notification("notifications/progress", std::move(params)));
}

std::string_view RequestEnvironment::context_json() {
    if (context_.empty()) {
        Json ctx = {{"principal", request_.principal.to_json()},
                    {"revision", std::string(revision_name(request_.revision))},
                    {"clientCapabilities", request_.client_capabilities}};
        describe(ctx);
        context_ = ctx.dump();
    }
    return context_;
}

std::string RequestEnvironment::owner() const {
    return request_.principal.owner_key();
}

void RequestEnvironment::describe(Json& context) const {
    context["family"] = family_;
    context["method"] = request_.method;
    for (const auto& [key, value] : subject_.items())
        context[key] = value;
}

void plugin_fault(const std::string& family, const std::string& what, const std::string& detail) {
    spdlog::error("{} ({}): {}", what, family, detail);
    throw ProtocolError(error_code::internal_error, "The plugin serving " + what +
                                                        " failed; the host logged the details. Try again later, or "
                                                        "tell the operator if it keeps failing.");
}

Json plugin_result(const PluginAnswer& answer, const std::string& family, const std::string& what) {
    switch (answer.status) {
    case GH_STATUS_OK: break;
    case GH_STATUS_INVALID_ARGS:
        throw ProtocolError(error_code::invalid_params,
                            answer.text.empty() ? "The arguments for " + what + " were refused." : answer.text);
    case GH_STATUS_TOOL_ERROR:
        throw ProtocolError(error_code::internal_error,
                            answer.text.empty() ? "The plugin serving " + what + " failed without saying why."
                                                : answer.text);
    case GH_STATUS_CANCELLED: throw ProtocolError(error_code::internal_error, "The request was cancelled.");
    case GH_STATUS_REFUSED:
        // A refusal with a stable code (FAMILY_CRASHED): the agent reads what to do next in the error's data.
        if (auto refusal = gate::family_refusal(answer.text))
            throw ProtocolError(error_code::internal_error, refusal->message,
                                {{"code", refusal->code}, {"next", refusal->next}});
        plugin_fault(family, what, "refused with an answer that is not {code, message, next}: " + answer.text);
    default: plugin_fault(family, what, "status " + std::to_string(answer.status) + ": " + answer.text);
    }
    Json result;
    try {
        result = Json::parse(answer.text);
    } catch (const Json::exception& e) {
        plugin_fault(family, what, std::string("answered with malformed JSON: ") + e.what());
    }
    if (!result.is_object()) plugin_fault(family, what, "answered with JSON that is not an object");
    return result;
}

} // namespace gatehouse::protocol
