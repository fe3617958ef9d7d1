#pragma once

#include "auth/principal.hpp"
#include "plugins/live_registry.hpp"
#include "protocol/json_rpc.hpp"

#include <map>
#include <utility>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::protocol {

// Progressive disclosure: which families tools/list shows. A family whose
// YAML says `exposure: on_demand` stays out of the list; while any family is
// on demand the list carries four host tools instead — list_domains,
// load_domain, describe_tool and call_tool — so an agent facing many
// families loads only what it needs. The list is the same for every caller;
// a configuration re-read (SIGHUP) or a change of the registry changes it.
// Thread-safe.
class ToolDisclosure {
public:
    static constexpr std::string_view kListDomains = "list_domains";
    static constexpr std::string_view kLoadDomain = "load_domain";
    static constexpr std::string_view kDescribeTool = "describe_tool";
    static constexpr std::string_view kCallTool = "call_tool";
    // A job (a task of a tool that runs only as one, called by a client
    // without the Tasks extension): its state, its result, its end. Listed
    // and callable whenever some tool runs only as a task (`offers_jobs`).
    static constexpr std::string_view kJobStatus = "job_status";
    static constexpr std::string_view kJobResult = "job_result";
    static constexpr std::string_view kJobCancel = "job_cancel";
    static bool is_job_tool(std::string_view name) {
        return name == kJobStatus || name == kJobResult || name == kJobCancel;
    }
    static_assert(plugins::host_tool_name(kListDomains) && plugins::host_tool_name(kLoadDomain) &&
                      plugins::host_tool_name(kDescribeTool) && plugins::host_tool_name(kCallTool) &&
                      plugins::host_tool_name(kJobStatus) && plugins::host_tool_name(kJobResult) &&
                      plugins::host_tool_name(kJobCancel),
                  "every host tool's name is reserved in plugins::kHostToolNames");

    explicit ToolDisclosure(const plugins::LiveRegistry& registry, bool offers_jobs = false);
    ~ToolDisclosure();

    // A tool's own exposure (true: on demand), by its family and its name
    // in the family (before a prefix or a name hook), so a tool listed later
    // keeps it: an upstream's, once its server answers or lists anew.
    using ToolExposure = std::map<std::pair<std::string, std::string>, bool>;

    // Families named here go on demand, every other one is listed; a tool
    // named in tool_on_demand is on demand or listed as it says, whatever
    // its family is. True when the published tool list changed.
    bool apply(const std::set<std::string>& on_demand_families, const ToolExposure& tool_on_demand = {});
    // The same exposure laid on the registry serving now (a family joined,
    // left or listed anew). True when the published tool list changed.
    bool refresh();

    struct Listing {
        std::shared_ptr<const plugins::ToolRegistry> registry; // what the tools are of, kept with them
        std::vector<const plugins::Tool*> tools;               // by published name
        std::vector<Json> written; // tools' tools/list entries, in their order, written once (written_json)
        std::string fingerprint;   // what tools/list cursors carry
        std::set<std::string> on_demand;
        bool scoped = false;      // some listed tool needs a token scope: tools/list differs per token
        bool hides_tools = false; // some tool is on demand: the meta tools are offered
    };
    std::shared_ptr<const Listing> listing() const;

    // The host tool of that name while some family is on demand (a job
    // tool: whenever jobs are offered), else null. A family's own tool of
    // the same name wins (the registry is asked first).
    const plugins::Tool* meta_tool(std::string_view name) const;

    // Answers list_domains, load_domain and describe_tool (call_tool is the
    // caller's: it goes through the whole tools/call path again). Arguments
    // are already validated against the meta tool's inputSchema. Like
    // tools/list, load_domain shows `principal` only the tools its token's
    // scopes can call, and list_domains counts those.
    Json answer(const plugins::Tool& meta_tool, const Json& arguments, const auth::Principal& principal) const;

private:
    const plugins::LiveRegistry& registry_;
    std::vector<std::unique_ptr<plugins::Tool>> meta_tools_;
    std::vector<std::unique_ptr<plugins::Tool>> job_tools_;
    bool make_listing();

    std::mutex applying_; // one apply at a time, over the settings below
    std::set<std::string> on_demand_families_;
    ToolExposure tool_on_demand_;
    mutable std::mutex mutex_;
    std::shared_ptr<const Listing> listing_;
};

} // namespace gatehouse::protocol
