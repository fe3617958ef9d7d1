#pragma once

#include <gatehouse/plugin.h>

#include "plugins/host_services.hpp"

#include <nlohmann/json.hpp>

#include <list>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::metrics {
struct TraceContext;
}

namespace gatehouse::plugins {

// What a host service answers a plugin: a GH_STATUS_* and the JSON it wrote
// (the service's answer, or a refusal {code, message, next}).
struct ServiceAnswer {
    int32_t status = GH_STATUS_OK;
    std::string json;
};

// What a plugin can reach of the request it is serving, through the host
// function table. The protocol layer implements it for each request; a tool
// call adds its session services (session::CallSessions).
class CallEnvironment {
public:
    virtual ~CallEnvironment() = default;
    virtual bool cancelled() const = 0;
    virtual void log(int32_t level, std::string_view logger, std::string_view message) = 0;
    virtual void progress(double done, double total, std::string_view message) = 0;
    virtual std::string_view context_json() = 0;
    // What the host's own families (an upstream's, which runs in the host)
    // read of the call without building and parsing context_json: the
    // capabilities the agent's client declared (null: none), and the
    // caller's owner key (empty: no caller).
    virtual const nlohmann::json* client_capabilities() const { return nullptr; }
    virtual std::string owner() const { return {}; }
    // The trace of the request the call serves (null: none): the host's log
    // lines for it carry it whichever thread writes them, also a thread that
    // hears a family's process rather than the one the call began on.
    virtual const metrics::TraceContext* trace() const { return nullptr; }

    // The session services, one per ABI slot (1.1: describe, open,
    // rules_accept, critical_read; 1.4: store_credentials). Outside a tool
    // call of a host with sessions they refuse: no session can be reached.
    virtual ServiceAnswer describe_session(std::string_view handle);
    virtual ServiceAnswer open_session(std::string_view topic);
    virtual ServiceAnswer accept_rules(std::string_view handle, std::string_view code);
    virtual ServiceAnswer record_critical_read(std::string_view item_ids);
    virtual ServiceAnswer store_credentials();

    // Whether what the plugin logs may hold the store password (the operator
    // allowed it store_credentials); then log lines go through masked().
    virtual bool masks_passwords() const { return false; }
    virtual std::string masked(std::string_view text) { return std::string(text); }
};

} // namespace gatehouse::plugins

// The opaque ABI handles, defined by the host.
struct gh_sink {
    std::string bytes;
    // An answer of a family that runs in the host (an upstream's result,
    // already parsed from its server's message) handed over as JSON, which
    // the host takes as it is rather than as text to parse once more;
    // `bytes` is then empty. Never set across the plugin ABI.
    std::optional<nlohmann::json> value;
};

struct gh_call {
    gatehouse::plugins::CallEnvironment* environment;
    std::string_view family;
    // api->sink_new; a list keeps each sink where it is, and an empty one
    // (most calls) allocates nothing, where a deque allocates on construction.
    std::list<gh_sink> answer_sinks;
    // ABI 1.3: this round of a multi round-trip request (api->input_responses, api->request_state).
    std::string_view input_responses = "{}";
    std::string_view request_state = {};
    // The host this call belongs to (its state backend, its bus): never null
    // for a call the host makes.
    const gatehouse::plugins::HostServices* host = nullptr;
};
