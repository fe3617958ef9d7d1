#include "protocol/tool_disclosure.hpp"

#include "plugins/tool_definition.hpp"
#include "protocol/json_writer.hpp"
#include "protocol/tool_call.hpp"

#include <algorithm>
#include <functional>

namespace gatehouse::protocol {

namespace {

std::unique_ptr<plugins::Tool> make_meta_tool(std::string_view name, std::string title, std::string description,
                                              Json input_schema) {
    auto tool = std::make_unique<plugins::Tool>();
    tool->name = std::string(name);
    tool->plugin_name = tool->name;
    tool->family = "gatehouse";
    tool->title = std::move(title);
    tool->description = std::move(description);
    tool->input_schema = schema::JsonSchema::compile(input_schema);
    tool->risk = plugins::Risk::read;
    tool->gate_exempt = true; // the tool call_tool forwards to meets the gate itself
    // call_tool does whatever the tool it forwards to does, so its hints are
    // the worst any tool may have; the others only read the registry.
    const bool forwards = name == ToolDisclosure::kCallTool;
    tool->annotations = {{"readOnlyHint", !forwards},
                         {"destructiveHint", forwards},
                         {"idempotentHint", !forwards},
                         {"openWorldHint", forwards}};
    tool->listing = {{"name", tool->name},
                     {"title", tool->title},
                     {"description", tool->description},
                     {"inputSchema", std::move(input_schema)},
                     {"annotations", tool->annotations}};
    return tool;
}

Json object_schema(Json properties, Json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)},
            {"additionalProperties", false}};
}

Json text_result(Json structured) {
    return {{"content", Json::array({{{"type", "text"}, {"text", structured.dump()}}})},
            {"structuredContent", std::move(structured)}};
}

const Json kName = {{"type", "string"}, {"minLength", 1}, {"maxLength", 128}};

} // namespace

ToolDisclosure::ToolDisclosure(const plugins::LiveRegistry& registry, bool offers_jobs) : registry_(registry) {
    if (offers_jobs) {
        const Json job_argument =
            object_schema({{"job",
                            {{"type", "string"},
                             {"minLength", 1},
                             {"maxLength", 128},
                             {"description", "The job's id, as the call that started it answered."}}}},
                          {"job"});
        job_tools_.push_back(make_meta_tool(kJobStatus, "A job's state",
                                            "Tells how a job started by a tool call is doing: working, completed, "
                                            "failed or cancelled, with a message and when to ask again.",
                                            job_argument));
        job_tools_.push_back(make_meta_tool(kJobResult, "A job's result",
                                            "Returns the result of a finished job exactly as the tool that started "
                                            "it would have; says so when the job has not finished.",
                                            job_argument));
        job_tools_.push_back(make_meta_tool(kJobCancel, "Cancel a job",
                                            "Asks a running job to stop. It ends as cancelled unless it finishes "
                                            "first.",
                                            job_argument));
        // Cancelling changes something; the other two only read.
        job_tools_.back()->annotations = {
            {"readOnlyHint", false}, {"destructiveHint", false}, {"idempotentHint", true}, {"openWorldHint", false}};
        job_tools_.back()->listing["annotations"] = job_tools_.back()->annotations;
    }
    meta_tools_.push_back(make_meta_tool(kListDomains, "List tool domains",
                                         "Lists every tool domain (family) this server offers, whether tools/list "
                                         "shows its tools or it loads on demand, and how many tools it has.",
                                         object_schema(Json::object(), Json::array())));
    meta_tools_.push_back(make_meta_tool(
        kLoadDomain, "Load a tool domain",
        "Returns the tool definitions of one domain (as tools/list would show them). Call them with call_tool, or "
        "directly by name.",
        object_schema({{"domain", kName}}, {"domain"})));
    meta_tools_.push_back(make_meta_tool(kDescribeTool, "Describe a tool",
                                         "Returns the full registry definition of one tool: name, title, "
                                         "description, domain, inputSchema, outputSchema, scope, required_scopes, "
                                         "risk and platform_version.",
                                         object_schema({{"name", kName}}, {"name"})));
    meta_tools_.push_back(
        make_meta_tool(kCallTool, "Call a tool",
                       "Calls a tool by name with its arguments, exactly as tools/call would: the same gate, the "
                       "same argument checks, the same result.",
                       object_schema({{"name", kName}, {"arguments", {{"type", "object"}}}}, {"name"})));
    apply({});
}

ToolDisclosure::~ToolDisclosure() = default;

bool ToolDisclosure::apply(const std::set<std::string>& on_demand_families, const ToolExposure& tool_on_demand) {
    std::lock_guard applying(applying_);
    on_demand_families_ = on_demand_families;
    tool_on_demand_ = tool_on_demand;
    return make_listing();
}

bool ToolDisclosure::refresh() {
    std::lock_guard applying(applying_);
    return make_listing();
}

// Under applying_.
bool ToolDisclosure::make_listing() {
    const auto& on_demand_families = on_demand_families_;
    const auto& tool_on_demand = tool_on_demand_;
    auto next = std::make_shared<Listing>();
    next->registry = registry_.current();
    const plugins::ToolRegistry& registry = *next->registry;
    for (const auto& family : registry.families())
        if (on_demand_families.count(family.family)) next->on_demand.insert(family.family);
    next->hides_tools = !next->on_demand.empty();
    for (const plugins::Tool* tool : registry.ordered()) {
        const auto own = tool_on_demand.find({tool->family, tool->plugin_name});
        if (own != tool_on_demand.end() ? own->second : next->on_demand.count(tool->family) > 0)
            next->hides_tools = true;
        else
            next->tools.push_back(tool);
    }
    if (next->hides_tools)
        for (const auto& meta : meta_tools_)
            if (!registry.find(meta->name)) next->tools.push_back(meta.get());
    for (const auto& job : job_tools_)
        if (!registry.find(job->name)) next->tools.push_back(job.get());
    if (next->hides_tools || !job_tools_.empty())
        std::sort(next->tools.begin(), next->tools.end(),
                  [](const plugins::Tool* a, const plugins::Tool* b) { return a->name < b->name; });
    // Each entry written once here, for every tools/list page to copy as it
    // is, and the listing's fingerprint taken from the same text.
    std::string all;
    next->written.reserve(next->tools.size());
    for (const plugins::Tool* tool : next->tools) {
        const std::size_t start = all.size();
        append_json(all, tool->listing);
        next->written.push_back(written_json(std::string_view(all).substr(start)));
        all += '\n';
        if (!tool->scope.empty()) next->scoped = true;
    }
    next->fingerprint = std::to_string(std::hash<std::string>{}(all)&0xffffffffu);
    std::lock_guard lock(mutex_);
    const bool changed = !listing_ || listing_->fingerprint != next->fingerprint;
    listing_ = std::move(next);
    return changed;
}

std::shared_ptr<const ToolDisclosure::Listing> ToolDisclosure::listing() const {
    std::lock_guard lock(mutex_);
    return listing_;
}

const plugins::Tool* ToolDisclosure::meta_tool(std::string_view name) const {
    for (const auto& job : job_tools_)
        if (job->name == name) return job.get();
    if (!listing()->hides_tools) return nullptr;
    for (const auto& meta : meta_tools_)
        if (meta->name == name) return meta.get();
    return nullptr;
}

Json ToolDisclosure::answer(const plugins::Tool& meta_tool, const Json& arguments,
                            const auth::Principal& principal) const {
    const auto current = listing();
    const plugins::ToolRegistry& registry = *current->registry;
    const auto callable = [&](const plugins::Tool* tool) { return !scope_refusal(*tool, principal); };
    if (meta_tool.name == kListDomains) {
        Json domains = Json::array();
        for (const auto& family : registry.families())
            domains.push_back({{"domain", family.family},
                               {"exposure", current->on_demand.count(family.family) ? "on_demand" : "listed"},
                               {"tools", std::count_if(family.tools.begin(), family.tools.end(), callable)},
                               {"platform_version", family.version}});
        return text_result({{"domains", std::move(domains)}});
    }
    if (meta_tool.name == kLoadDomain) {
        const auto& domain = arguments.at("domain").get_ref<const std::string&>();
        for (const auto& family : registry.families()) {
            if (family.family != domain) continue;
            Json tools = Json::array();
            for (const plugins::Tool* tool : family.tools)
                if (callable(tool)) tools.push_back(tool->listing);
            return text_result({{"domain", domain}, {"tools", std::move(tools)}});
        }
        return tool_error("There is no tool domain '" + domain + "'; list_domains names them.");
    }
    if (meta_tool.name == kDescribeTool) {
        const auto& name = arguments.at("name").get_ref<const std::string&>();
        if (const plugins::Tool* tool = registry.find(name)) return text_result(plugins::tool_definition(*tool));
        return tool_error("There is no tool '" + name + "'; load_domain lists the tools of a domain.");
    }
    return tool_error("Tool '" + meta_tool.name + "' has no answer of its own.");
}

} // namespace gatehouse::protocol
