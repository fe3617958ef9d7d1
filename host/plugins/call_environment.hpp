#pragma once

#include <gatehouse/plugin.h>

#include <deque>
#include <string>
#include <string_view>

namespace gatehouse::plugins {

// What a plugin can reach of the request it is serving, through the host
// function table. The protocol layer implements it for each tools/call.
class CallEnvironment {
public:
    virtual ~CallEnvironment() = default;
    virtual bool cancelled() const = 0;
    virtual void log(int32_t level, std::string_view logger, std::string_view message) = 0;
    virtual void progress(double done, double total, std::string_view message) = 0;
    virtual std::string_view context_json() = 0;

    // ABI 1.1 session services ("describe", "open", "rules_accept",
    // "critical_read"): returns a GH_STATUS_* and writes the JSON answer.
    virtual int32_t session_request(std::string_view operation, std::string_view first, std::string_view second,
                                    std::string& reply) {
        (void)operation, (void)first, (void)second;
        reply = R"({"code":"STATE_UNAVAILABLE","message":"This host serves no sessions here."})";
        return GH_STATUS_TOOL_ERROR;
    }

    // ABI 1.4 store_credentials: returns a GH_STATUS_* and writes the JSON
    // answer. Outside a gated tool call there is no session to sign in for.
    virtual int32_t store_credentials(std::string& reply) {
        reply = R"({"code":"NOT_CONNECTED","message":"The store's sign-in is handed out only during a gated tool )"
                R"(call in an open session."})";
        return GH_STATUS_TOOL_ERROR;
    }

    // Whether what the plugin logs may hold the store password (the operator
    // allowed it store_credentials); then log lines go through masked().
    virtual bool masks_passwords() const { return false; }
    virtual std::string masked(std::string_view text) { return std::string(text); }
};

} // namespace gatehouse::plugins

// The opaque ABI handles, defined by the host.
struct gh_sink {
    std::string bytes;
};

struct gh_call {
    gatehouse::plugins::CallEnvironment* environment;
    std::string_view family;
    std::deque<gh_sink> answer_sinks; // api->sink_new; a deque keeps each sink where it is
    // ABI 1.3: this round of a multi round-trip request (api->input_responses, api->request_state).
    std::string_view input_responses = "{}";
    std::string_view request_state = {};
};
