#pragma once

#include "config/config.hpp"
#include "crypto/openssl.hpp"
#include "metrics/log_allowance.hpp"
#include "plugins/remote_family.hpp"
#include "schema/param_headers.hpp"
#include "upstream/client_session.hpp"
#include "upstream/name_hook.hpp"

#include <gatehouse/plugin.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace gatehouse::upstream {

class ClientCredentials;

struct UpstreamOptions {
    config::UpstreamEntry entry;
    std::size_t max_message_bytes = 4 * 1024 * 1024; // limits.max_message_bytes
    std::size_t max_json_depth = 64;                 // limits.max_json_depth
    std::chrono::milliseconds tool_timeout{120000};  // its tool_timeout_ms, else limits.tool_timeout_ms
    std::string host_version;
    // How long a call whose server asked for input waits for the agent's
    // answers: the longer of input_requests.state_ttl_ms and client_timeout_ms.
    std::chrono::milliseconds input_wait{600000};
    // A server that cannot be reached at start: false throws, as for a
    // one-shot command; true keeps the family with nothing listed, and it
    // connects as it would after losing the server, listing when it answers.
    bool wait_when_unreachable = false;
    // True once the host stops: a connection still being made gives up at
    // once (within a poll), and the family is not made.
    std::function<bool()> abandoned;
};

// An MCP server served as a family (upstreams: in YAML). It connects and
// lists the server's tools, and offers them to the loader as a descriptor
// whose every tool forwards its call to the server, so the registry, the
// gate and the result checks treat them as they treat a plugin's. The
// operator's word (scope, grants, risk, rules, gated, allow or deny) is laid
// on each tool here; the name hook names them. When the server's connection
// ends, calls answer UPSTREAM_UNAVAILABLE and the host connects again, with
// backoff (a command is started again).
class UpstreamFamily final : public plugins::RemoteFamily {
public:
    struct OfferedTool {
        std::string own_name;  // the upstream's
        std::string published; // after the hook
        gh_tool_desc desc{};
    };
    struct OfferedResource {
        gh_resource_desc desc{};
    };
    struct OfferedTemplate {
        std::string uri_template;
        gh_resource_template_desc desc{};
    };
    struct OfferedPrompt {
        std::string own_name, published;
        gh_prompt_desc desc{};
    };
    // What the server listed at one time, as the descriptor the loader
    // reads as a plugin's. A registry that serves its tools keeps it (their
    // data points into it), so a new listing never changes one in use.
    struct Offer {
        gh_plugin_desc desc{};
        std::deque<std::string> strings; // what desc and the tables' gh_str point at
        std::deque<OfferedTool> tools;
        std::deque<OfferedResource> resources;
        std::deque<OfferedTemplate> templates;
        std::deque<OfferedPrompt> prompts;
        std::vector<const gh_tool_desc*> tool_table;
        std::vector<const gh_resource_desc*> resource_table;
        std::vector<const gh_resource_template_desc*> template_table;
        std::vector<const gh_prompt_desc*> prompt_table;
        std::string listed;                    // what the server's lists said, to tell a listing that changed
        std::vector<std::string> listed_tools; // the server's own names of every tool it lists, sorted
        // Each served tool's x-mcp-header arguments, by its own name (HTTP sends them as headers).
        std::map<std::string, std::vector<schema::ParamHeader>> param_headers;

        gh_str keep(std::string text);
        // The published name of descriptor tool (prompt) `index`: the hook applied.
        const std::string& published_name(std::size_t index) const { return tools[index].published; }
        const std::string& published_prompt_name(std::size_t index) const { return prompts[index].published; }
    };

    // Connects and lists its tools. Throws std::runtime_error with the
    // sentence the load report shows when it cannot (unless
    // wait_when_unreachable says to keep trying).
    explicit UpstreamFamily(UpstreamOptions options);
    ~UpstreamFamily() override;
    UpstreamFamily(const UpstreamFamily&) = delete;
    UpstreamFamily& operator=(const UpstreamFamily&) = delete;

    // What it offers now.
    std::shared_ptr<const Offer> offer() const;
    // `heard` runs on the supervisor's thread after the offer changed: the
    // server answered for the first time, or listed something else after
    // saying its lists changed, or after a new connection.
    void on_offer_changed(std::function<void()> heard);
    // Disconnects for good (its upstreams entry was removed): its calls
    // answer UPSTREAM_UNAVAILABLE from now on, and no offer changes.
    void retire();
    // A round's state the host will not bring back (the agent's 2025-11-25
    // client refused or did not answer what was asked, or the rounds ran
    // out): the upstream call it keeps open for that round is ended now,
    // not at the end of the input wait. `owner` must be the call's.
    void drop_round(std::string_view state, const std::string& owner, const std::string& reason);

    void* plugin_state() override { return this; }
    bool init(const std::string& config_json, std::string& error) override;

    // What `gatehouse plugins` and the log say of it.
    std::string describe() const;
    bool serving() const;
    std::string why_not_serving() const;
    std::string protocol_version() const;
    const std::string& name() const { return options_.entry.name; }
    const config::UpstreamEntry& entry() const { return options_.entry; }
    // Whether the hook could have named `published` (a tool or prompt of its
    // server): what a call of a tool it has not listed yet is told.
    bool could_have_named(std::string_view published) const { return hook_.could_have_named(published); }
    // The milliseconds until it tries to connect again (0 when it is serving).
    std::int64_t retry_after_ms() const;

private:
    // A call whose server asked for input (a 2025-11-25 server's
    // elicitation/create, sampling/createMessage or roots/list during it),
    // kept open upstream until the agent answers in the next round. The
    // host's sealed requestState names it; only this instance holds it.
    struct Parked {
        std::shared_ptr<ClientSession> session;
        std::int64_t request = 0;                    // the host's request upstream
        std::map<std::string, nlohmann::json> asked; // input key -> the server's request id
        // input key -> {method, params} as JSON text, for asking again: text,
        // so what a waiting call holds is what the byte budget counts
        std::map<std::string, std::string> requests;
        std::string owner; // the principal it waits for
        std::chrono::steady_clock::time_point expires;
        std::size_t bytes = 0; // the text of `requests`, counted against the budgets
    };
    // What the server listed, each list only if it offers it.
    struct Listing {
        std::vector<nlohmann::json> tools, resources, templates, prompts;
        nlohmann::json server_info;
        bool completions = false; // the server offers completion/complete
    };

    UpstreamOptions options_;
    NameHook hook_;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::shared_ptr<const Offer> offer_;     // under mutex_
    std::function<void()> on_offer_changed_; // under mutex_
    std::string protocol_version_;           // under mutex_: the last connection's
    std::shared_ptr<ClientSession> session_; // null while it is down
    // A connection being opened and listed: closed by retire(), so a server
    // slow to answer keeps no one waiting for the supervisor to end.
    std::shared_ptr<ClientSession> connecting_;
    std::string down_because_;
    std::chrono::steady_clock::time_point next_attempt_{};
    bool stopping_ = false;
    bool retired_ = false;
    bool relist_ = false;                             // the server said its lists changed
    std::unordered_map<std::string, Parked> parked_;  // by the handle in the round's state
    std::shared_ptr<ClientCredentials> oauth_;        // oauth: the host's client at the upstream's authorization server
    std::shared_ptr<const crypto::TlsConnector> tls_; // https://: how its server is checked, read once
    std::thread supervisor_;
    // What the host says of what its server sent, per call (an ask it cannot
    // relay): a server that does it without end fills no log.
    mutable metrics::LogAllowance complaints_;

    std::shared_ptr<ClientSession> connect();
    Listing list(ClientSession& session) const;
    std::shared_ptr<const Offer> make_offer(const Listing& listing) const;
    void offer_tools(const Listing& listing, Offer& offer) const;
    void offer_resources(const Listing& listing, Offer& offer) const;
    void offer_prompts(const Listing& listing, Offer& offer) const;
    // Takes what `session` lists now as the offer; tells on_offer_changed_
    // when it differs. Called without mutex_.
    void take_listing(ClientSession& session);
    // `next` becomes the offer, and the host hears of it, when it differs.
    void adopt(std::shared_ptr<const Offer> next);
    void supervise();
    int32_t call(const OfferedTool& tool, gh_call* call, gh_str arguments, gh_sink* out);
    int32_t ask(gh_call* call, const std::string& method, nlohmann::json params, const std::string& what,
                nlohmann::json& result, gh_sink* out, bool relays = true);
    int32_t park(Parked parked, gh_sink* out);
    int32_t pass_on_input_required(const nlohmann::json& result, const std::string& what, gh_sink* out) const;
    void end_parked(std::vector<Parked> ended, const std::string& reason);
    void sweep_parked();
    int32_t complete(gh_call* call, nlohmann::json ref, gh_str argument, gh_str value, gh_str context, gh_sink* out);
    int32_t unavailable(gh_sink* out, const std::string& why, bool reached) const;
    static int32_t call_tool(void* state, void* tool_data, gh_call* call, gh_str arguments, gh_sink* out);
    static int32_t read_resource(void* state, void* data, gh_call* call, gh_str uri, gh_str variables, gh_sink* out);
    static int32_t get_prompt(void* state, void* data, gh_call* call, gh_str arguments, gh_sink* out);
    static int32_t complete_prompt(void* state, void* data, gh_call* call, gh_str argument, gh_str value,
                                   gh_str context, gh_sink* out);
    static int32_t complete_template(void* state, void* data, gh_call* call, gh_str argument, gh_str value,
                                     gh_str context, gh_sink* out);
};

} // namespace gatehouse::upstream
