#include "plugins/plugin_loader.hpp"

#include "config/data_folder.hpp"
#include "config/family_name.hpp"
#include "isolation/family_process.hpp"
#include "plugins/abi_struct.hpp"
#include "plugins/abi_text.hpp"
#include "plugins/host_api.hpp"
#include "plugins/tool_listing.hpp"
#include "plugins/tool_overrides.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/utf8_text.hpp"
#include "upstream/upstream_family.hpp"

#include <boost/dll/shared_library.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace gatehouse::plugins {

namespace {

// A refusal of one plugin, carrying the sentence for the start-up report.
struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string hex(uint32_t bits) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%x", bits);
    return text;
}

bool looks_like_elf(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// How deep a descriptor's JSON (a schema, annotations, prompt arguments) may
// nest: far past any real schema, and shallow enough that what reads it
// recursively (the schema compiler, the listing's writer) cannot exhaust a
// thread's stack, also for a family whose process sends it.
constexpr std::size_t kMaxDescriptorDepth = 64;

// The longest rules text a tool or a family may have: an agent is shown it
// whole (describe_tool, the refusal that asks for its acceptance).
constexpr std::size_t kMaxRulesBytes = 64 * 1024;

nlohmann::json parse_json_field(gh_str text, const std::string& what) {
    auto parsed = protocol::parse_bounded(abi_view(text), kMaxDescriptorDepth);
    if (parsed.outcome == protocol::BoundedParse::Outcome::too_deep)
        throw Refused(what + " nests deeper than " + std::to_string(kMaxDescriptorDepth) + " levels");
    if (!parsed.parsed()) throw Refused("malformed descriptor JSON in " + what + ": " + parsed.error);
    return std::move(parsed.value);
}

// Text a plugin describes itself with goes into JSON listings and log lines,
// so it must be UTF-8: a listing that cannot be written would stop every
// family's loading, not only this one's.
std::string text_field(gh_str text, const std::string& what) {
    std::string copied = abi_copy(text);
    if (const auto bad = protocol::first_non_utf8(copied))
        throw Refused(what + " is not UTF-8 (byte " + std::to_string(*bad + 1) + ")");
    return copied;
}

std::shared_ptr<const schema::JsonSchema> compile_schema(const nlohmann::json& doc, const std::string& what,
                                                         bool must_be_object_type) {
    if (!doc.is_object()) throw Refused("invalid " + what + ": a schema must be a JSON object");
    if (must_be_object_type) {
        auto type = doc.find("type");
        if (type == doc.end() || *type != "object")
            throw Refused("invalid " + what + ": the root must have \"type\": \"object\"");
    }
    try {
        return schema::JsonSchema::compile(doc);
    } catch (const std::invalid_argument& e) {
        throw Refused("invalid " + what + ": " + e.what());
    }
}

Risk read_risk(uint32_t risk, const std::string& tool) {
    switch (risk) {
    case GH_RISK_READ: return Risk::read;
    case GH_RISK_WRITE: return Risk::write;
    case GH_RISK_MONEY: return Risk::money;
    case GH_RISK_DESTRUCTIVE: return Risk::destructive;
    default:
        throw Refused("tool '" + tool + "' declares risk " + std::to_string(risk) +
                      " (allowed: read, write, money, destructive)");
    }
}

// MCP annotations follow the declared risk: a hint the plugin left out is
// derived from it, and one that claims less than the risk (readOnlyHint on a
// tool that writes, destructiveHint false on a destructive one) is set right
// and logged, since a client may skip asking the person on the hint's word.
// A hint more careful than the risk stays.
void annotate_for_risk(nlohmann::json& annotations, Risk risk, const std::string& tool) {
    const auto set = [&](const char* hint, bool value) {
        const auto said = annotations.find(hint);
        if (said != annotations.end())
            spdlog::warn("tool '{}': annotations.{} is {}, which its risk ({}) contradicts; published as {}", tool,
                         hint, said->dump(), risk_name(risk), value);
        annotations[hint] = value;
    };
    const bool read_only = risk == Risk::read;
    const auto read_hint = annotations.find("readOnlyHint");
    if (read_hint == annotations.end() || !read_hint->is_boolean() || (read_hint->get<bool>() && !read_only))
        set("readOnlyHint", read_only);
    if (read_only) return;
    const bool destructive = risk == Risk::destructive;
    const auto destructive_hint = annotations.find("destructiveHint");
    if (destructive_hint == annotations.end() || !destructive_hint->is_boolean() ||
        (destructive && !destructive_hint->get<bool>()))
        set("destructiveHint", destructive);
}

std::unique_ptr<Tool> read_tool(const gh_tool_desc* raw, std::size_t index, const std::string& prefix,
                                bool sessions = false) {
    std::string why;
    auto desc = read_abi_struct<gh_tool_desc>(raw, why);
    if (!desc) throw Refused("tool #" + std::to_string(index) + ": " + why);
    auto tool = std::make_unique<Tool>();
    tool->plugin_name = abi_copy(desc->name);
    if (!valid_tool_name(tool->plugin_name))
        throw Refused("tool #" + std::to_string(index) + " has an invalid name '" + tool->plugin_name +
                      "' (1-64 of letters, digits, '_', '-', '.')");
    const std::string& n = tool->plugin_name;
    if (desc->flags & ~GH_TOOL_KNOWN_FLAGS)
        throw Refused("tool '" + n + "' sets unknown flag bits " + hex(desc->flags & ~GH_TOOL_KNOWN_FLAGS) +
                      " (this host knows " + hex(GH_TOOL_KNOWN_FLAGS) + ")");
    if (!desc->call) throw Refused("tool '" + n + "' has no call function");
    tool->name = prefix + n;
    if (!valid_tool_name(tool->name))
        throw Refused("tool '" + tool->name + "' is longer than 64 characters with its prefix");
    tool->title = text_field(desc->title, "the title of tool '" + n + "'");
    tool->description = text_field(desc->description, "the description of tool '" + n + "'");
    tool->scope = text_field(desc->scope, "the scope of tool '" + n + "'");
    tool->rules = text_field(desc->rules, "the rules of tool '" + n + "'");
    if (tool->rules.size() > kMaxRulesBytes)
        throw Refused("the rules of tool '" + n + "' are " + std::to_string(tool->rules.size()) + " bytes; at most " +
                      std::to_string(kMaxRulesBytes) + " are read (an agent is shown them before the first call)");
    tool->gate_exempt = (desc->flags & GH_TOOL_GATE_EXEMPT) != 0;
    tool->reads_critical = (desc->flags & GH_TOOL_READS_CRITICAL) != 0;
    switch (desc->task_support) {
    case GH_TASK_NONE: tool->task_support = TaskSupport::none; break;
    case GH_TASK_OPTIONAL: tool->task_support = TaskSupport::optional; break;
    case GH_TASK_REQUIRED: tool->task_support = TaskSupport::required; break;
    default:
        throw Refused("tool '" + n + "' declares task_support " + std::to_string(desc->task_support) +
                      " (allowed: 0 none, 1 optional, 2 required)");
    }
    tool->asks_before_task = (desc->flags & GH_TOOL_ASKS_BEFORE_TASK) != 0;
    if (tool->asks_before_task && tool->task_support == TaskSupport::none)
        throw Refused("tool '" + n + "' sets GH_TOOL_ASKS_BEFORE_TASK but declares no task_support");
    tool->risk = read_risk(desc->risk, n);
    tool->call = desc->call;
    tool->tool_data = desc->tool_data;

    tool->input_schema = compile_schema(parse_json_field(desc->input_schema, "the inputSchema of tool '" + n + "'"),
                                        "inputSchema of tool '" + n + "'", true);
    try {
        tool->param_headers = schema::find_param_headers(tool->input_schema->document());
    } catch (const std::invalid_argument& e) {
        // Clients must drop such a tool (MCP 2026-07-28, Streamable HTTP), so
        // it is refused here, with the reason, rather than published broken.
        throw Refused("invalid inputSchema of tool '" + n + "': " + e.what());
    }
    if (desc->output_schema.len > 0)
        tool->output_schema =
            compile_schema(parse_json_field(desc->output_schema, "the outputSchema of tool '" + n + "'"),
                           "outputSchema of tool '" + n + "'", true);
    if (desc->required_scopes.len > 0) {
        auto scopes = parse_json_field(desc->required_scopes, "the required_scopes of tool '" + n + "'");
        if (!scopes.is_array()) throw Refused("required_scopes of tool '" + n + "' must be a JSON array of strings");
        for (const auto& s : scopes) {
            if (!s.is_string() || s.get<std::string>().empty())
                throw Refused("required_scopes of tool '" + n + "' must be a JSON array of non-empty strings");
            tool->required_scopes.push_back(s.get<std::string>());
        }
    }
    tool->annotations = nlohmann::json::object();
    if (desc->annotations.len > 0) {
        tool->annotations = parse_json_field(desc->annotations, "the annotations of tool '" + n + "'");
        if (!tool->annotations.is_object()) throw Refused("annotations of tool '" + n + "' must be a JSON object");
    }
    annotate_for_risk(tool->annotations, tool->risk, tool->name);
    publish_listing(*tool, sessions);
    return tool;
}

// ---- ABI 1.2: resources, resource templates, prompts ----

// An absolute URI as RFC 3986 starts one: a scheme, then ':'. No spaces or
// control characters anywhere, since a URI travels inside JSON and logs.
std::string uri_problem(std::string_view uri) {
    if (uri.empty()) return "is empty";
    if (uri.size() > 2048) return "is longer than 2048 characters";
    const auto colon = uri.find(':');
    if (colon == std::string_view::npos || colon == 0 || !std::isalpha(static_cast<unsigned char>(uri[0])))
        return "has no scheme (an absolute URI starts with one, e.g. \"test://...\" or \"file:///...\")";
    for (std::size_t i = 1; i < colon; ++i) {
        const char c = uri[i];
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'))
            return "has a scheme with the character '" + std::string(1, c) +
                   "' (allowed: letters, digits, '+', '-', '.')";
    }
    for (std::size_t i = 0; i < uri.size(); ++i) {
        const auto c = static_cast<unsigned char>(uri[i]);
        if (c <= 0x20 || c == 0x7f) return "has a space or control character at character " + std::to_string(i + 1);
    }
    return {};
}

bool valid_mime_type(const std::string& type) {
    const auto slash = type.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == type.size() || type.size() > 255) return false;
    for (char c : type)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
    return true;
}

// MCP Annotations: the keys the spec names must have the spec's types; other
// keys pass through, as the spec's schema allows.
nlohmann::json read_annotations(gh_str text, const std::string& what) {
    if (text.len == 0) return nullptr;
    auto a = parse_json_field(text, "the annotations of " + what);
    if (!a.is_object()) throw Refused("annotations of " + what + " must be a JSON object");
    if (auto audience = a.find("audience"); audience != a.end()) {
        bool ok = audience->is_array();
        if (ok)
            for (const auto& role : *audience)
                ok = ok && (role == "user" || role == "assistant");
        if (!ok) throw Refused("annotations.audience of " + what + " must be an array of \"user\" and \"assistant\"");
    }
    if (auto priority = a.find("priority"); priority != a.end())
        if (!priority->is_number() || *priority < 0 || *priority > 1)
            throw Refused("annotations.priority of " + what + " must be a number from 0 to 1");
    if (auto modified = a.find("lastModified"); modified != a.end() && !modified->is_string())
        throw Refused("annotations.lastModified of " + what + " must be an ISO 8601 string");
    return a;
}

// The fields a resource and a resource template share, into their listing.
void describe(nlohmann::json& listing, const std::string& what, gh_str name, gh_str title, gh_str description,
              gh_str mime_type, gh_str annotations) {
    const std::string n = text_field(name, "the name of " + what);
    if (n.empty()) throw Refused(what + " has no name (a short name for programs is required)");
    listing["name"] = n;
    if (title.len > 0) listing["title"] = text_field(title, "the title of " + what);
    if (description.len > 0) listing["description"] = text_field(description, "the description of " + what);
    if (mime_type.len > 0) {
        const std::string type = abi_copy(mime_type);
        if (!valid_mime_type(type)) throw Refused(what + " has an invalid MIME type '" + type + "' (type/subtype)");
        listing["mimeType"] = type;
    }
    auto a = read_annotations(annotations, what);
    if (!a.is_null()) listing["annotations"] = std::move(a);
}

std::unique_ptr<Resource> read_resource(const gh_resource_desc* raw, std::size_t index) {
    std::string why;
    auto desc = read_abi_struct<gh_resource_desc>(raw, why);
    if (!desc) throw Refused("resource #" + std::to_string(index) + ": " + why);
    auto resource = std::make_unique<Resource>();
    resource->uri = text_field(desc->uri, "the URI of resource #" + std::to_string(index));
    if (auto problem = uri_problem(resource->uri); !problem.empty())
        throw Refused("resource #" + std::to_string(index) + " has a URI that " + problem);
    const std::string what = "resource '" + resource->uri + "'";
    if (desc->flags & ~GH_RESOURCE_KNOWN_FLAGS)
        throw Refused(what + " sets unknown flag bits " + hex(desc->flags & ~GH_RESOURCE_KNOWN_FLAGS) +
                      " (this host knows " + hex(GH_RESOURCE_KNOWN_FLAGS) + ")");
    if (!desc->read) throw Refused(what + " has no read function");
    resource->read = desc->read;
    resource->data = desc->resource_data;
    auto& l = resource->listing;
    l["uri"] = resource->uri;
    describe(l, what, desc->name, desc->title, desc->description, desc->mime_type, desc->annotations);
    if (desc->flags & GH_RESOURCE_HAS_SIZE) {
        if (desc->size > static_cast<uint64_t>(INT64_MAX)) throw Refused(what + " declares a size beyond 2^63 bytes");
        l["size"] = static_cast<int64_t>(desc->size);
    }
    return resource;
}

std::unique_ptr<ResourceTemplate> read_resource_template(const gh_resource_template_desc* raw, std::size_t index) {
    std::string why;
    auto desc = read_abi_struct<gh_resource_template_desc>(raw, why);
    if (!desc) throw Refused("resource template #" + std::to_string(index) + ": " + why);
    const std::string text =
        text_field(desc->uri_template, "the URI template of resource template #" + std::to_string(index));
    const std::string what = "resource template '" + text + "'";
    UriTemplate compiled;
    try {
        compiled = UriTemplate::parse(text);
    } catch (const std::invalid_argument& e) {
        throw Refused("resource template #" + std::to_string(index) + " '" + text + "' is not usable: " + e.what());
    }
    // Its literal start must already look like an absolute URI.
    if (auto problem = uri_problem(text.substr(0, text.find('{')) + "x"); !problem.empty())
        throw Refused(what + " does not start like an absolute URI: it " + problem);
    if (desc->flags & ~GH_RESOURCE_TEMPLATE_KNOWN_FLAGS)
        throw Refused(what + " sets unknown flag bits " + hex(desc->flags & ~GH_RESOURCE_TEMPLATE_KNOWN_FLAGS) +
                      " (this host knows none)");
    if (!desc->read) throw Refused(what + " has no read function");
    auto t = std::make_unique<ResourceTemplate>(
        ResourceTemplate{std::move(compiled), {}, desc->read, desc->complete, desc->template_data, nullptr, {}});
    auto& l = t->listing;
    l["uriTemplate"] = text;
    describe(l, what, desc->name, desc->title, desc->description, desc->mime_type, desc->annotations);
    return t;
}

std::vector<PromptArgument> read_prompt_arguments(gh_str text, const std::string& what, nlohmann::json& listing) {
    std::vector<PromptArgument> out;
    if (text.len == 0) return out;
    auto args = parse_json_field(text, "the arguments of " + what);
    if (!args.is_array()) throw Refused("arguments of " + what + " must be a JSON array of {\"name\", ...} objects");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& a = args[i];
        const std::string where = "argument #" + std::to_string(i) + " of " + what;
        if (!a.is_object()) throw Refused(where + " must be a JSON object");
        for (const auto& [key, value] : a.items()) {
            if (key == "name" || key == "title" || key == "description") {
                if (!value.is_string()) throw Refused(where + " has a non-string \"" + key + "\"");
            } else if (key == "required") {
                if (!value.is_boolean()) throw Refused(where + " has a non-boolean \"required\"");
            } else {
                throw Refused(where + " has the unknown key \"" + key +
                              "\" (allowed: name, title, description, required)");
            }
        }
        auto name = a.find("name");
        if (name == a.end() || name->get_ref<const std::string&>().empty() ||
            name->get_ref<const std::string&>().size() > 64)
            throw Refused(where + " needs a \"name\" of 1-64 characters");
        if (!seen.insert(name->get<std::string>()).second)
            throw Refused(what + " declares the argument '" + name->get<std::string>() + "' twice");
        out.push_back({name->get<std::string>(), a.value("required", false)});
    }
    listing["arguments"] = std::move(args);
    return out;
}

std::unique_ptr<Prompt> read_prompt(const gh_prompt_desc* raw, std::size_t index, const std::string& prefix) {
    std::string why;
    auto desc = read_abi_struct<gh_prompt_desc>(raw, why);
    if (!desc) throw Refused("prompt #" + std::to_string(index) + ": " + why);
    auto prompt = std::make_unique<Prompt>();
    prompt->plugin_name = abi_copy(desc->name);
    if (!valid_tool_name(prompt->plugin_name))
        throw Refused("prompt #" + std::to_string(index) + " has an invalid name '" + prompt->plugin_name +
                      "' (1-64 of letters, digits, '_', '-', '.')");
    const std::string what = "prompt '" + prompt->plugin_name + "'";
    if (desc->flags & ~GH_PROMPT_KNOWN_FLAGS)
        throw Refused(what + " sets unknown flag bits " + hex(desc->flags & ~GH_PROMPT_KNOWN_FLAGS) +
                      " (this host knows none)");
    if (!desc->get) throw Refused(what + " has no get function");
    prompt->name = prefix + prompt->plugin_name;
    if (!valid_tool_name(prompt->name))
        throw Refused("prompt '" + prompt->name + "' is longer than 64 characters with its prefix");
    prompt->get = desc->get;
    prompt->complete = desc->complete;
    prompt->data = desc->prompt_data;
    auto& l = prompt->listing;
    l["name"] = prompt->name;
    if (desc->title.len > 0) l["title"] = text_field(desc->title, "the title of " + what);
    if (desc->description.len > 0) l["description"] = text_field(desc->description, "the description of " + what);
    prompt->arguments = read_prompt_arguments(desc->arguments, what, l);
    return prompt;
}

bool valid_page_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

std::unique_ptr<Page> read_page(const gh_page_desc* raw, std::size_t index) {
    std::string why;
    auto desc = read_abi_struct<gh_page_desc>(raw, why);
    if (!desc) throw Refused("page #" + std::to_string(index) + ": " + why);
    auto page = std::make_unique<Page>();
    page->name = abi_copy(desc->name);
    if (!valid_page_name(page->name))
        throw Refused("page #" + std::to_string(index) + " has an invalid name '" + page->name +
                      "' (1-64 of lowercase letters, digits, '_', '-')");
    if (desc->flags & ~GH_PAGE_KNOWN_FLAGS)
        throw Refused("page '" + page->name + "' sets unknown flag bits " + hex(desc->flags & ~GH_PAGE_KNOWN_FLAGS) +
                      " (this host knows none)");
    if (!desc->show || !desc->act) throw Refused("page '" + page->name + "' needs both show and act functions");
    page->show = desc->show;
    page->act = desc->act;
    page->data = desc->page_data;
    return page;
}

// [a-z][a-z0-9-]{0,31}: a word a person types after `gatehouse`.
bool valid_command_name(std::string_view name) {
    if (name.empty() || name.size() > 32 || !(name[0] >= 'a' && name[0] <= 'z')) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// ABI 1.6: the family's command-line verbs, each checked and unique within
// the family (across families, load() checks). An older descriptor's
// zero-filled tail has none.
std::vector<Command> read_commands(const gh_plugin_desc& desc) {
    if (desc.reserved3 != 0) throw Refused("descriptor sets reserved3, which must be zero");
    if (desc.command_count > 64) throw Refused("descriptor declares more than 64 commands");
    if (desc.command_count > 0 && !desc.commands) throw Refused("descriptor lists commands but has no command table");
    std::vector<Command> out;
    std::set<std::string> seen;
    for (uint32_t i = 0; i < desc.command_count; ++i) {
        std::string why;
        auto raw = read_abi_struct<gh_command_desc>(desc.commands[i], why);
        if (!raw) throw Refused("command #" + std::to_string(i) + ": " + why);
        Command command;
        command.name = abi_copy(raw->name);
        if (!valid_command_name(command.name))
            throw Refused("command #" + std::to_string(i) + " has an invalid name '" + command.name +
                          "' (1-32 of lowercase letters, digits and '-', a letter first)");
        if (raw->flags & ~GH_COMMAND_KNOWN_FLAGS)
            throw Refused("command '" + command.name + "' sets unknown flag bits " +
                          hex(raw->flags & ~GH_COMMAND_KNOWN_FLAGS));
        if (!raw->run) throw Refused("command '" + command.name + "' has no run function");
        if (!seen.insert(command.name).second) throw Refused("command '" + command.name + "' is declared twice");
        command.usage = text_field(raw->usage, "the usage of command '" + command.name + "'");
        command.summary = text_field(raw->summary, "the summary of command '" + command.name + "'");
        command.run = raw->run;
        command.data = raw->command_data;
        out.push_back(std::move(command));
    }
    return out;
}

struct Candidate {
    std::string upstream; // the upstreams entry it came from; empty for a plugin
    std::shared_ptr<LoadedPlugin> plugin;
    std::shared_ptr<const void> listing; // an upstream's: what its tools point into
    std::vector<std::unique_ptr<Tool>> tools;
    std::vector<Command> commands;
    FamilyOffer offer;
    std::string prefix;
    nlohmann::json settings;
};

// ABI 1.2: the family's resources, resource templates and prompts, each
// checked and unique within the family (across families, load() checks).
void read_offer(const gh_plugin_desc& desc, Candidate& c) {
    if (desc.reserved1 != 0) throw Refused("descriptor sets reserved1, which must be zero");
    constexpr uint32_t kMaxEach = 10000;
    if (desc.resource_count > kMaxEach || desc.resource_template_count > kMaxEach || desc.prompt_count > kMaxEach ||
        desc.page_count > kMaxEach)
        throw Refused("descriptor declares more than 10000 resources, resource templates or prompts");
    if (desc.resource_count > 0 && !desc.resources)
        throw Refused("descriptor lists resources but has no resource table");
    if (desc.resource_template_count > 0 && !desc.resource_templates)
        throw Refused("descriptor lists resource templates but has no resource template table");
    if (desc.prompt_count > 0 && !desc.prompts) throw Refused("descriptor lists prompts but has no prompt table");
    if (desc.page_count > 0 && !desc.pages) throw Refused("descriptor lists pages but has no page table");
    if (desc.reserved2 != 0) throw Refused("descriptor sets reserved2, which must be zero");

    std::set<std::string> seen;
    for (uint32_t i = 0; i < desc.resource_count; ++i) {
        auto r = read_resource(desc.resources[i], i);
        if (!seen.insert(r->uri).second) throw Refused("resource '" + r->uri + "' is declared twice");
        c.offer.resources.push_back(std::move(r));
    }
    seen.clear();
    for (uint32_t i = 0; i < desc.resource_template_count; ++i) {
        auto t = read_resource_template(desc.resource_templates[i], i);
        if (!seen.insert(t->uri_template.text()).second)
            throw Refused("resource template '" + t->uri_template.text() + "' is declared twice");
        c.offer.resource_templates.push_back(std::move(t));
    }
    seen.clear();
    for (uint32_t i = 0; i < desc.prompt_count; ++i) {
        auto p = read_prompt(desc.prompts[i], i, c.prefix);
        if (!seen.insert(p->plugin_name).second) throw Refused("prompt '" + p->plugin_name + "' is declared twice");
        c.offer.prompts.push_back(std::move(p));
    }
    seen.clear();
    for (uint32_t i = 0; i < desc.page_count; ++i) {
        auto page = read_page(desc.pages[i], i);
        if (!seen.insert(page->name).second) throw Refused("page '" + page->name + "' is declared twice");
        c.offer.pages.push_back(std::move(page));
    }
}

// Steps up to (not including) init: open, find the entry, read and check the
// descriptor and every tool in it.
Candidate open_plugin(const std::filesystem::path& path, const config::PluginEntry& entry, const config::Config& cfg,
                      std::string& disabled_family) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw Refused("file not found");
    if (!std::filesystem::is_regular_file(path, ec)) throw Refused("not a regular file");
    if (!looks_like_elf(path)) throw Refused("not a shared library (no ELF header)");

    std::unique_ptr<isolation::FamilyProcess> process;
    OpenedLibrary opened;
    if (entry.own_process) {
        isolation::FamilyProcessOptions options;
        options.library = path;
        options.limits = {entry.memory_mb, entry.cpu_seconds, entry.open_files};
        options.environment = entry.environment;
        options.call_deadline = std::chrono::milliseconds(entry.tool_timeout_ms.value_or(cfg.limits.tool_timeout_ms));
        try {
            process = std::make_unique<isolation::FamilyProcess>(std::move(options));
        } catch (const std::runtime_error& e) {
            throw Refused(e.what());
        }
    } else {
        opened = open_library(path, host_api());
    }
    const gh_plugin_desc* raw = process ? process->descriptor() : opened.descriptor;

    // abi_version sits right after struct_size in every version, so the major
    // can be checked before trusting any other field.
    uint32_t raw_size = 0, raw_abi = 0;
    std::memcpy(&raw_size, raw, sizeof raw_size);
    if (raw_size >= 2 * sizeof(uint32_t)) std::memcpy(&raw_abi, reinterpret_cast<const char*>(raw) + 4, 4);
    if (GH_ABI_MAJOR(raw_abi) != GH_ABI_VERSION_MAJOR)
        throw Refused("ABI version mismatch: the plugin was built for ABI " + std::to_string(GH_ABI_MAJOR(raw_abi)) +
                      "." + std::to_string(raw_abi & 0xffff) + ", this host speaks ABI " +
                      std::to_string(GH_ABI_VERSION_MAJOR) + "." + std::to_string(GH_ABI_VERSION_MINOR));
    std::string why;
    auto desc = read_abi_struct<gh_plugin_desc>(raw, why);
    if (!desc) throw Refused("descriptor: " + why);
    if (desc->flags & ~GH_PLUGIN_KNOWN_FLAGS)
        throw Refused("descriptor sets unknown flag bits " + hex(desc->flags & ~GH_PLUGIN_KNOWN_FLAGS) +
                      " (this host knows " + hex(GH_PLUGIN_KNOWN_FLAGS) + ")");
    const std::string family = abi_copy(desc->family);
    if (!config::valid_family_name(family))
        throw Refused("invalid family name '" + family + "' (1-64 of lowercase letters, digits, '_', '-')");
    if (desc->tool_count > 0 && !desc->tools) throw Refused("descriptor lists tools but has no tool table");
    if (desc->tool_count > 10000) throw Refused("descriptor declares more than 10000 tools");

    Candidate c;
    auto domain = cfg.domains.find(family);
    if (domain != cfg.domains.end()) {
        if (!domain->second.enabled) {
            disabled_family = family;
            return c;
        }
        c.prefix = domain->second.prefix;
        c.settings = domain->second.settings;
    } else {
        c.settings = nlohmann::json::object();
    }
    // LoadedPlugin keeps these; they are shown in listings and logs.
    text_field(desc->name, "the plugin's name");
    text_field(desc->version, "the plugin's version");
    if (text_field(desc->rules, "the family's rules").size() > kMaxRulesBytes)
        throw Refused("the family's rules are longer than " + std::to_string(kMaxRulesBytes) + " bytes");

    std::set<std::string> seen;
    for (uint32_t i = 0; i < desc->tool_count; ++i) {
        auto tool = read_tool(desc->tools[i], i, c.prefix, cfg.session.configured);
        if (!seen.insert(tool->plugin_name).second) throw Refused("tool '" + tool->plugin_name + "' is declared twice");
        if (host_tool_name(tool->name))
            throw Refused("tool '" + tool->name + "' takes the name of one of the host's own tools");
        tool->family = family;
        c.tools.push_back(std::move(tool));
    }
    if (domain != cfg.domains.end()) apply_tool_overrides(domain->second, family, c.tools, cfg.session.configured);
    read_offer(*desc, c);
    c.commands = read_commands(*desc);
    c.plugin = process ? std::make_shared<LoadedPlugin>(std::move(process), path, *desc)
                       : std::make_shared<LoadedPlugin>(std::move(opened.library), path, *desc);
    return c;
}

// What an upstream family offers now, read as a plugin's descriptor is:
// its tools carry the hook's names, and the operator's word on each.
void read_upstream_offer(const upstream::UpstreamFamily& family, const config::Config& cfg, Candidate& c) {
    const auto& name = family.name();
    auto offer = family.offer();
    const gh_plugin_desc& desc = offer->desc;
    for (uint32_t i = 0; i < desc.tool_count; ++i) {
        // A tool of a server's the host cannot serve (its schema does not
        // compile, say) is left out; it does not keep the others from serving.
        std::unique_ptr<Tool> tool;
        try {
            tool = read_tool(desc.tools[i], i, "", cfg.session.configured);
        } catch (const Refused& e) {
            spdlog::warn("upstream '{}': tool '{}' is left out: {}", name, abi_view(desc.tools[i]->name).substr(0, 200),
                         e.what());
            continue;
        }
        tool->name = offer->published_name(i);
        if (host_tool_name(tool->name)) {
            spdlog::warn("upstream '{}': tool '{}' is left out: '{}' is the name of one of the host's own tools", name,
                         tool->plugin_name, tool->name);
            continue;
        }
        tool->family = name;
        publish_listing(*tool, cfg.session.configured);
        c.tools.push_back(std::move(tool));
    }
    // The listing is kept first: the tools point into it whatever follows.
    c.listing = offer;
    // An override naming a tool the server does not list is reported once
    // the rest is read, so a caller that carries on has a whole candidate.
    std::optional<config::ConfigError> unknown_override;
    auto domain = cfg.domains.find(name);
    if (domain != cfg.domains.end()) try {
            apply_tool_overrides(domain->second, name, c.tools, cfg.session.configured);
        } catch (const config::ConfigError& e) {
            unknown_override = e;
        }
    read_offer(desc, c);
    for (std::size_t i = 0; i < c.offer.prompts.size(); ++i) {
        auto& prompt = *c.offer.prompts[i];
        prompt.name = offer->published_prompt_name(i);
        prompt.listing["name"] = prompt.name;
    }
    if (unknown_override) throw *unknown_override;
}

// An upstreams entry: connect, list, and read the descriptor the family
// builds from that as a plugin's is read.
Candidate connect_upstream(const config::UpstreamEntry& entry, const config::Config& cfg, std::string& disabled_family,
                           bool wait_when_unreachable, std::function<bool()> abandoned = {}) {
    Candidate c;
    c.upstream = entry.name;
    auto domain = cfg.domains.find(entry.name);
    if (domain != cfg.domains.end()) {
        if (!domain->second.enabled) {
            disabled_family = entry.name;
            return c;
        }
        if (!domain->second.prefix.empty())
            throw Refused("domains." + entry.name +
                          ".prefix does not name an upstream's tools; its names (the name "
                          "hook, now '" +
                          entry.names + "') does");
        c.settings = domain->second.settings;
    } else {
        c.settings = nlohmann::json::object();
    }
    upstream::UpstreamOptions options;
    options.entry = entry;
    options.max_message_bytes = cfg.limits.max_message_bytes;
    options.max_json_depth = cfg.limits.max_json_depth;
    options.tool_timeout = std::chrono::milliseconds(entry.tool_timeout_ms.value_or(cfg.limits.tool_timeout_ms));
    options.host_version = cfg.server.version;
    options.input_wait =
        std::chrono::milliseconds(std::max(cfg.input_requests.state_ttl_ms, cfg.input_requests.client_timeout_ms));
    options.wait_when_unreachable = wait_when_unreachable;
    options.abandoned = std::move(abandoned);
    std::unique_ptr<upstream::UpstreamFamily> family;
    try {
        family = std::make_unique<upstream::UpstreamFamily>(std::move(options));
    } catch (const std::runtime_error& e) {
        throw Refused(e.what());
    }
    try {
        read_upstream_offer(*family, cfg, c);
    } catch (const config::ConfigError&) {
        // A tool override that names no tool the server lists is the
        // operator's to mend only once the server has listed its tools.
        if (family->serving()) throw;
    }
    const std::string where = "upstream " + entry.name + " (" + family->describe() + ")";
    const gh_plugin_desc desc = family->offer()->desc;
    c.plugin = std::make_shared<LoadedPlugin>(std::move(family), where, desc);
    return c;
}

// The names families publish, each one's by one family: tools, URIs, URI
// templates, prompts and command verbs are one namespace each.
class Namespaces {
public:
    Namespaces() = default;
    // Every family of `serving` but `except`.
    Namespaces(const ToolRegistry& serving, std::string_view except) {
        for (const auto& e : serving.entries())
            if (e->info.family != except) claim(*e);
    }

    // Refuses a family that would take a name another one has.
    void check(const Candidate& c) const { check(c.plugin->family(), c.upstream, c.tools, c.offer, c.commands); }
    void check(const FamilyEntry& e) const {
        check(e.info.family, e.plugin->upstream() ? e.info.family : "", e.tools, e.offer, e.plugin->commands());
    }

    // What an upstream lists anew: whatever would take another family's
    // name is left out (and logged), so the rest of its listing serves.
    void leave_out_clashes(Candidate& c) const {
        const std::string& family = c.upstream;
        const auto drop = [&](auto& items, auto key, const auto& owners, const char* what) {
            std::erase_if(items, [&](const auto& item) {
                const std::string& name = key(*item);
                auto clash = owners.find(name);
                if (clash == owners.end()) return false;
                spdlog::warn("upstream '{}' now lists {} '{}', which family '{}' serves; it is left out (set names "
                             "on upstream '{}' to keep them apart)",
                             family, what, name, clash->second, family);
                return true;
            });
        };
        drop(
            c.tools, [](const Tool& t) -> const std::string& { return t.name; }, tool_owner_, "tool");
        drop(
            c.offer.resources, [](const Resource& r) -> const std::string& { return r.uri; }, resource_owner_,
            "resource");
        drop(
            c.offer.resource_templates,
            [](const ResourceTemplate& t) -> const std::string& { return t.uri_template.text(); }, template_owner_,
            "resource template");
        drop(
            c.offer.prompts, [](const Prompt& p) -> const std::string& { return p.name; }, prompt_owner_, "prompt");
        std::erase_if(c.offer.resources, [&](const auto& r) {
            const auto reader = template_reading(r->uri);
            if (!reader) return false;
            spdlog::warn("upstream '{}' now lists resource '{}', which family '{}' reads through its template "
                         "'{}'; it is left out",
                         family, r->uri, reader->second, reader->first);
            return true;
        });
        std::erase_if(c.offer.resource_templates, [&](const auto& t) {
            const auto other = overlapping(t->uri_template);
            if (!other) return false;
            spdlog::warn("upstream '{}' now lists resource template '{}', which may match URIs family '{}' serves "
                         "('{}'); it is left out",
                         family, t->uri_template.text(), other->second, other->first);
            return true;
        });
    }

    void claim(const Candidate& c, const std::string& path) {
        claim(c.plugin->family(), c.tools, c.offer, c.commands, path);
    }

private:
    // `upstream` is the family's name when it is an upstream, else empty.
    void check(const std::string& family, const std::string& upstream, const std::vector<std::unique_ptr<Tool>>& tools,
               const FamilyOffer& offer, const std::vector<Command>& commands) const {
        if (auto other = family_path_.find(family); other != family_path_.end())
            throw Refused("family '" + family + "' is already served by " + other->second);
        const std::string fix = upstream.empty()
                                    ? "give one family a prefix under domains." + family + ".prefix"
                                    : "set names (the name hook) on upstream '" + upstream + "' to keep them apart";
        for (const auto& t : tools)
            if (auto clash = tool_owner_.find(t->name); clash != tool_owner_.end())
                throw Refused("tool name '" + t->name + "'" +
                              (upstream.empty() ? "" : " of upstream '" + upstream + "'") + " clashes with family '" +
                              clash->second + "'; " + fix);
        for (const auto& r : offer.resources)
            if (auto clash = resource_owner_.find(r->uri); clash != resource_owner_.end())
                throw Refused("resource URI '" + r->uri + "' is already served by family '" + clash->second +
                              "'; a URI names one resource");
        for (const auto& t : offer.resource_templates)
            if (auto clash = template_owner_.find(t->uri_template.text()); clash != template_owner_.end())
                throw Refused("resource template '" + t->uri_template.text() + "' is already served by family '" +
                              clash->second + "'");
        // resources/read takes a URI to the family of the first resource or
        // template that matches it: a family whose template (or resource)
        // would match another's URIs could read, and answer for, what an
        // agent asks of that other family.
        for (const auto& r : offer.resources)
            if (const auto reader = template_reading(r->uri))
                throw Refused("resource URI '" + r->uri + "' is read by family '" + reader->second +
                              "' through its template '" + reader->first + "'; a URI is read from one family");
        for (const auto& t : offer.resource_templates)
            if (const auto other = overlapping(t->uri_template))
                throw Refused("resource template '" + t->uri_template.text() + "' may match URIs family '" +
                              other->second + "' serves ('" + other->first +
                              "'); a URI is read from one family: give each family URIs of its own");
        for (const auto& p : offer.prompts)
            if (auto clash = prompt_owner_.find(p->name); clash != prompt_owner_.end())
                throw Refused("prompt name '" + p->name + "' clashes with family '" + clash->second + "'; " + fix);
        for (const auto& command : commands)
            if (auto clash = command_owner_.find(command.name); clash != command_owner_.end())
                throw Refused("command '" + command.name + "' is already declared by family '" + clash->second +
                              "'; a verb names one family's command");
    }

    void claim(const FamilyEntry& e) {
        claim(e.info.family, e.tools, e.offer, e.plugin->commands(),
              e.plugin->upstream() ? upstream_label(e.info.family) : e.info.path);
    }
    void claim(const std::string& family, const std::vector<std::unique_ptr<Tool>>& tools, const FamilyOffer& offer,
               const std::vector<Command>& commands, const std::string& path) {
        for (const auto& t : tools)
            tool_owner_.emplace(t->name, family);
        for (const auto& r : offer.resources)
            resource_owner_.emplace(r->uri, family);
        for (const auto& t : offer.resource_templates) {
            template_owner_.emplace(t->uri_template.text(), family);
            templates_.emplace_back(t->uri_template, family);
        }
        for (const auto& p : offer.prompts)
            prompt_owner_.emplace(p->name, family);
        for (const auto& command : commands)
            command_owner_.emplace(command.name, family);
        family_path_.emplace(family, path);
    }

    std::unordered_map<std::string, std::string> tool_owner_;  // published name -> family
    std::unordered_map<std::string, std::string> family_path_; // served family -> its file
    std::unordered_map<std::string, std::string> resource_owner_, template_owner_, prompt_owner_;
    std::unordered_map<std::string, std::string> command_owner_; // a verb names one family's command
    std::vector<std::pair<UriTemplate, std::string>> templates_; // every claimed template, and its family

    // Another family's template that matches `uri`: {its text, whose}. A
    // listed URI is read before any template, so a family listing one that
    // another's template reads would take that family's reads of it.
    std::optional<std::pair<std::string, std::string>> template_reading(const std::string& uri) const {
        for (const auto& [claimed, family] : templates_)
            if (claimed.match(uri, false)) return std::make_pair(claimed.text(), family); // any URI it could read
        return std::nullopt;
    }
    // Another family's template some URI could match as well as this one:
    // {its text, whose}. (A template that matches another family's listed
    // URI takes nothing from it: the listed URI is read first.)
    std::optional<std::pair<std::string, std::string>> overlapping(const UriTemplate& candidate) const {
        for (const auto& [claimed, family] : templates_)
            if (claimed.text() != candidate.text() && claimed.may_overlap(candidate))
                return std::make_pair(claimed.text(), family);
        return std::nullopt;
    }
};

// A checked family's parts, each told its family, made into its entry.
std::shared_ptr<const FamilyEntry> entry_of(Candidate c) {
    const std::string family = c.plugin->family();
    for (auto& r : c.offer.resources)
        r->family = family;
    for (auto& t : c.offer.resource_templates)
        t->family = family;
    for (auto& p : c.offer.prompts)
        p->family = family;
    for (auto& page : c.offer.pages)
        page->family = family;
    return make_family_entry(std::move(c.plugin), std::move(c.tools), c.prefix, std::move(c.offer),
                             std::move(c.listing));
}

// init, then the bounds of its entry where it sets them.
void start_family(Candidate& c, const config::Config& cfg, const std::optional<unsigned>& max_in_flight,
                  const std::optional<std::uint64_t>& tool_timeout_ms, bool store_credentials) {
    const std::string family = c.plugin->family();
    const nlohmann::json init_config = {{"data_dir", (cfg.data_dir / family).string()}, {"settings", c.settings}};
    std::string init_error;
    if (!c.plugin->init(init_config.dump(), init_error)) throw Refused("init failed: " + init_error);
    plugins::PluginCallLimits limits;
    limits.max_in_flight = max_in_flight.value_or(cfg.limits.max_in_flight_per_plugin);
    limits.tool_timeout_ms = tool_timeout_ms.value_or(cfg.limits.tool_timeout_ms);
    limits.max_in_flight_overridden = max_in_flight.has_value();
    limits.tool_timeout_overridden = tool_timeout_ms.has_value();
    c.plugin->set_call_limits(limits);
    c.plugin->set_store_credentials(store_credentials);
}

} // namespace

OpenedLibrary open_library(const std::filesystem::path& path, const gh_host_api* api) {
    OpenedLibrary opened;
    boost::dll::fs::error_code load_error;
    opened.library.load(path.string(), boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local,
                        load_error);
    if (load_error) throw Refused("cannot load the shared library: " + load_error.message());
    if (!opened.library.has(GH_ENTRY_SYMBOL))
        throw Refused(std::string("missing entry symbol ") + GH_ENTRY_SYMBOL + " (is it built with GH_EXPORT_PLUGIN?)");
    auto entry = opened.library.get<const gh_plugin_desc*(const gh_host_api*)>(GH_ENTRY_SYMBOL);
    opened.descriptor = entry(api);
    if (!opened.descriptor) throw Refused(std::string(GH_ENTRY_SYMBOL) + " returned no descriptor");
    return opened;
}

std::filesystem::path resolve_plugin_path(const config::PluginEntry& entry, const config::Config& cfg) {
    if (entry.path.has_parent_path() || entry.path.is_absolute()) return entry.path;
    return cfg.plugin_dir / entry.path;
}

bool valid_tool_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
    return true;
}

std::unique_ptr<Tool> read_tool_descriptor(const gh_tool_desc* raw, std::size_t index, const std::string& prefix,
                                           bool sessions) {
    return read_tool(raw, index, prefix, sessions);
}

std::unique_ptr<Resource> read_resource_descriptor(const gh_resource_desc* raw, std::size_t index) {
    return read_resource(raw, index);
}

std::unique_ptr<ResourceTemplate> read_resource_template_descriptor(const gh_resource_template_desc* raw,
                                                                    std::size_t index) {
    return read_resource_template(raw, index);
}

std::unique_ptr<Prompt> read_prompt_descriptor(const gh_prompt_desc* raw, std::size_t index,
                                               const std::string& prefix) {
    return read_prompt(raw, index, prefix);
}

std::unique_ptr<ToolRegistry> PluginLoader::load(const config::Config& cfg, LoadReport& report,
                                                 const LoadOptions& options) {
    // Before any family's init writes below it, whatever the verb.
    config::prepare_data_folder(cfg.data_dir);
    std::vector<std::shared_ptr<const FamilyEntry>> entries;
    Namespaces names;
    std::set<std::filesystem::path> opened;

    // One family, checked against those already admitted, then initialized
    // and added, within its entry's own bounds where it sets them.
    const auto admit = [&](Candidate c, const std::string& path, const std::optional<unsigned>& max_in_flight,
                           const std::optional<std::uint64_t>& tool_timeout_ms, bool store_credentials) {
        names.check(c);
        start_family(c, cfg, max_in_flight, tool_timeout_ms, store_credentials);
        names.claim(c, path);
        c.plugin->set_commands(std::move(c.commands));
        entries.push_back(entry_of(std::move(c)));
    };
    // What went wrong with one entry, in the report.
    const auto report_failure = [&](const std::string& path, const config::SourceLocation& where, bool upstream,
                                    auto&& attempt) {
        try {
            attempt();
        } catch (const Refused& e) {
            report.failures.push_back({path, e.what(), where, upstream});
        } catch (const config::ConfigError& e) {
            // The family's own config is at fault (a tool override naming no
            // tool of it): the report points there.
            for (const auto& problem : e.problems())
                report.failures.push_back({path, problem.message, problem.where, upstream});
        } catch (const std::exception& e) {
            report.failures.push_back({path, std::string("unexpected error: ") + e.what(), where, upstream});
        }
    };

    // Every upstream connects (starts, negotiates, lists) at once, while the
    // plugins load: a server slow to answer delays the start by its own
    // time, not by the sum of all of theirs. They are admitted in order.
    // (Declared first, destroyed last: a future left waits for its task, which writes here.)
    std::vector<std::string> disabled_upstream(cfg.upstreams.size());
    std::vector<std::future<Candidate>> connecting;
    for (std::size_t i = 0; i < cfg.upstreams.size(); ++i)
        connecting.push_back(std::async(std::launch::async, [&, i] {
            return connect_upstream(cfg.upstreams[i], cfg, disabled_upstream[i], options.wait_for_upstreams);
        }));
    for (const auto& entry : cfg.plugins) {
        const auto path = resolve_plugin_path(entry, cfg);
        report_failure(path.string(), entry.where, false, [&] {
            // The same library opened twice is one dlopen handle with one
            // static descriptor; say what happened instead of a family clash.
            std::error_code ec;
            const auto canonical = std::filesystem::weakly_canonical(path, ec);
            if (!ec && !opened.insert(canonical).second)
                throw Refused("this file is listed more than once under plugins");
            std::string disabled_family;
            Candidate c = open_plugin(path, entry, cfg, disabled_family);
            if (!disabled_family.empty()) {
                report.disabled.push_back({disabled_family, path.string()});
                return;
            }
            admit(std::move(c), path.string(), entry.max_in_flight, entry.tool_timeout_ms, entry.store_credentials);
        });
    }
    for (std::size_t i = 0; i < cfg.upstreams.size(); ++i) {
        const auto& entry = cfg.upstreams[i];
        const std::string label = upstream_label(entry.name);
        report_failure(label, entry.where, true, [&] {
            Candidate c = connecting[i].get();
            if (!disabled_upstream[i].empty()) {
                report.disabled.push_back({disabled_upstream[i], label});
                return;
            }
            const auto* family = c.plugin->upstream();
            if (!family->serving()) report.waiting.push_back({label, family->why_not_serving(), entry.where, true});
            admit(std::move(c), label, entry.max_in_flight, entry.tool_timeout_ms, false);
        });
    }
    return std::make_unique<ToolRegistry>(std::move(entries));
}

std::shared_ptr<const FamilyEntry> PluginLoader::open_upstream(const config::UpstreamEntry& entry,
                                                               const config::Config& cfg,
                                                               std::function<bool()> abandoned) {
    std::string disabled_family;
    Candidate c = connect_upstream(entry, cfg, disabled_family, true, std::move(abandoned));
    if (!disabled_family.empty()) return nullptr;
    start_family(c, cfg, entry.max_in_flight, entry.tool_timeout_ms, false);
    return entry_of(std::move(c));
}

void PluginLoader::check_joins(const FamilyEntry& family, const ToolRegistry& serving) {
    Namespaces(serving, "").check(family);
}

std::shared_ptr<const FamilyEntry> PluginLoader::relist_upstream(const FamilyEntry& family, const config::Config& cfg,
                                                                 const ToolRegistry& serving) {
    const auto* upstream = family.plugin->upstream();
    if (!upstream) throw std::logic_error("relist_upstream: family '" + family.info.family + "' is no upstream");
    Candidate c;
    c.upstream = family.info.family;
    c.plugin = family.plugin;
    try {
        read_upstream_offer(*upstream, cfg, c);
    } catch (const config::ConfigError& e) {
        for (const auto& problem : e.problems())
            spdlog::warn("upstream '{}': {} (line {})", c.upstream, problem.message, problem.where.line);
    }
    Namespaces(serving, c.upstream).leave_out_clashes(c);
    return entry_of(std::move(c));
}

std::shared_ptr<const ToolRegistry> with_family(const ToolRegistry& serving, std::string_view name,
                                                std::shared_ptr<const FamilyEntry> family) {
    std::vector<std::shared_ptr<const FamilyEntry>> entries;
    bool placed = false;
    for (const auto& e : serving.entries()) {
        if (e->info.family != name) {
            entries.push_back(e);
        } else if (family) {
            entries.push_back(family);
            placed = true;
        }
    }
    if (family && !placed) entries.push_back(std::move(family));
    return std::make_shared<ToolRegistry>(std::move(entries));
}

} // namespace gatehouse::plugins
