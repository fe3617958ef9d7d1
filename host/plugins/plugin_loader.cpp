#include "plugins/plugin_loader.hpp"

#include "plugins/abi_struct.hpp"
#include "plugins/host_api.hpp"

#include <boost/dll/shared_library.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace gatehouse::plugins {

namespace {

// A refusal of one plugin, carrying the sentence for the start-up report.
struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string copy(gh_str s) {
    return s.ptr ? std::string(s.ptr, s.len) : std::string();
}

bool valid_tool_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
    return true;
}

bool valid_family_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
              c == '-'))
            return false;
    return true;
}

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

nlohmann::json parse_json_field(gh_str text, const std::string& what) {
    try {
        return nlohmann::json::parse(std::string_view(text.ptr ? text.ptr : "", text.len));
    } catch (const nlohmann::json::exception& e) {
        throw Refused("malformed descriptor JSON in " + what + ": " + e.what());
    }
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

// MCP annotations derived from the declared risk, unless the plugin set them.
void default_annotations(nlohmann::json& annotations, Risk risk) {
    if (!annotations.contains("readOnlyHint")) annotations["readOnlyHint"] = risk == Risk::read;
    if (risk != Risk::read && !annotations.contains("destructiveHint"))
        annotations["destructiveHint"] = risk == Risk::destructive;
}

// A gated tool carries the session handle as an ordinary argument; the host
// checks and strips it, so only the published schema shows it.
void publish_session_argument(nlohmann::json& input_schema) {
    input_schema["properties"]["session"] = {{"type", "string"},
                                             {"description", "The session handle session_connect returned."}};
    auto& required = input_schema["required"];
    if (!required.is_array()) required = nlohmann::json::array();
    required.push_back("session");
}

std::unique_ptr<Tool> read_tool(const gh_tool_desc* raw, std::size_t index, const std::string& prefix,
                                bool sessions = false) {
    std::string why;
    auto desc = read_abi_struct<gh_tool_desc>(raw, GH_TOOL_DESC_SIZE_V1, why);
    if (!desc) throw Refused("tool #" + std::to_string(index) + ": " + why);
    auto tool = std::make_unique<Tool>();
    tool->plugin_name = copy(desc->name);
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
    tool->title = copy(desc->title);
    tool->description = copy(desc->description);
    tool->scope = copy(desc->scope);
    tool->rules = copy(desc->rules);
    tool->gate_exempt = (desc->flags & GH_TOOL_GATE_EXEMPT) != 0;
    tool->reads_critical = (desc->flags & GH_TOOL_READS_CRITICAL) != 0;
    tool->risk = read_risk(desc->risk, n);
    tool->call = desc->call;
    tool->tool_data = desc->tool_data;

    tool->input_schema = compile_schema(parse_json_field(desc->input_schema, "the inputSchema of tool '" + n + "'"),
                                        "inputSchema of tool '" + n + "'", true);
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
    default_annotations(tool->annotations, tool->risk);

    auto& l = tool->listing;
    l["name"] = tool->name;
    if (!tool->title.empty()) l["title"] = tool->title;
    if (!tool->description.empty()) l["description"] = tool->description;
    l["inputSchema"] = tool->input_schema->document();
    if (sessions && !tool->gate_exempt) publish_session_argument(l["inputSchema"]);
    if (tool->output_schema) l["outputSchema"] = tool->output_schema->document();
    l["annotations"] = tool->annotations;
    l["_meta"] = {{"dev.gatehouse/risk", risk_name(tool->risk)},
                  {"dev.gatehouse/requiredScopes", tool->required_scopes}};
    if (!tool->scope.empty()) l["_meta"]["dev.gatehouse/scope"] = tool->scope;
    if (!tool->rules.empty()) l["_meta"]["dev.gatehouse/hasRules"] = true;
    return tool;
}

struct Candidate {
    std::unique_ptr<LoadedPlugin> plugin;
    std::vector<std::unique_ptr<Tool>> tools;
    std::string prefix;
    nlohmann::json settings;
};

std::filesystem::path resolve(const config::PluginEntry& entry, const config::Config& cfg) {
    if (entry.path.has_parent_path() || entry.path.is_absolute()) return entry.path;
    return cfg.plugin_dir / entry.path;
}

// Steps up to (not including) init: open, find the entry, read and check the
// descriptor and every tool in it.
Candidate open_plugin(const std::filesystem::path& path, const config::Config& cfg, std::string& disabled_family) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw Refused("file not found");
    if (!std::filesystem::is_regular_file(path, ec)) throw Refused("not a regular file");
    if (!looks_like_elf(path)) throw Refused("not a shared library (no ELF header)");

    boost::dll::shared_library library;
    boost::dll::fs::error_code load_error;
    library.load(path.string(), boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local, load_error);
    if (load_error) throw Refused("cannot load the shared library: " + load_error.message());
    if (!library.has(GH_ENTRY_SYMBOL))
        throw Refused(std::string("missing entry symbol ") + GH_ENTRY_SYMBOL + " (is it built with GH_EXPORT_PLUGIN?)");
    auto entry = library.get<const gh_plugin_desc*(const gh_host_api*)>(GH_ENTRY_SYMBOL);
    const gh_plugin_desc* raw = entry(host_api());
    if (!raw) throw Refused(std::string(GH_ENTRY_SYMBOL) + " returned no descriptor");

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
    auto desc = read_abi_struct<gh_plugin_desc>(raw, GH_PLUGIN_DESC_SIZE_V1, why);
    if (!desc) throw Refused("descriptor: " + why);
    if (desc->flags & ~GH_PLUGIN_KNOWN_FLAGS)
        throw Refused("descriptor sets unknown flag bits " + hex(desc->flags & ~GH_PLUGIN_KNOWN_FLAGS) +
                      " (this host knows " + hex(GH_PLUGIN_KNOWN_FLAGS) + ")");
    const std::string family = copy(desc->family);
    if (!valid_family_name(family))
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

    std::set<std::string> seen;
    for (uint32_t i = 0; i < desc->tool_count; ++i) {
        auto tool = read_tool(desc->tools[i], i, c.prefix, cfg.session.configured);
        if (!seen.insert(tool->plugin_name).second) throw Refused("tool '" + tool->plugin_name + "' is declared twice");
        tool->family = family;
        c.tools.push_back(std::move(tool));
    }
    c.plugin = std::make_unique<LoadedPlugin>(std::move(library), path, *desc);
    return c;
}

} // namespace

std::unique_ptr<Tool> read_tool_descriptor(const gh_tool_desc* raw, std::size_t index, const std::string& prefix,
                                           bool sessions) {
    return read_tool(raw, index, prefix, sessions);
}

std::unique_ptr<ToolRegistry> PluginLoader::load(const config::Config& cfg, LoadReport& report) {
    auto registry = std::make_unique<ToolRegistry>();
    std::unordered_map<std::string, std::string> tool_owner;  // published name -> family
    std::unordered_map<std::string, std::string> family_path; // served family -> its file
    std::set<std::filesystem::path> opened;

    for (const auto& entry : cfg.plugins) {
        const auto path = resolve(entry, cfg);
        try {
            // The same library opened twice is one dlopen handle with one
            // static descriptor; say what happened instead of a family clash.
            std::error_code ec;
            const auto canonical = std::filesystem::weakly_canonical(path, ec);
            if (!ec && !opened.insert(canonical).second)
                throw Refused("this file is listed more than once under plugins");
            std::string disabled_family;
            Candidate c = open_plugin(path, cfg, disabled_family);
            if (!disabled_family.empty()) {
                report.disabled.push_back({disabled_family, path.string()});
                continue;
            }
            const std::string family = c.plugin->family();
            if (auto other = family_path.find(family); other != family_path.end())
                throw Refused("family '" + family + "' is already served by " + other->second);
            for (const auto& t : c.tools) {
                auto clash = tool_owner.find(t->name);
                if (clash != tool_owner.end())
                    throw Refused("tool name '" + t->name + "' clashes with family '" + clash->second +
                                  "'; give one family a prefix under domains." + family + ".prefix");
            }
            const nlohmann::json init_config = {{"data_dir", (cfg.data_dir / family).string()},
                                                {"settings", c.settings}};
            std::string init_error;
            if (!c.plugin->init(init_config.dump(), init_error)) throw Refused("init failed: " + init_error);
            for (const auto& t : c.tools)
                tool_owner.emplace(t->name, family);
            family_path.emplace(family, path.string());
            plugins::PluginCallLimits limits;
            limits.max_in_flight = entry.max_in_flight.value_or(cfg.limits.max_in_flight_per_plugin);
            limits.tool_timeout_ms = entry.tool_timeout_ms.value_or(cfg.limits.tool_timeout_ms);
            limits.max_in_flight_overridden = entry.max_in_flight.has_value();
            limits.tool_timeout_overridden = entry.tool_timeout_ms.has_value();
            c.plugin->set_call_limits(limits);
            registry->add_family(std::move(c.plugin), std::move(c.tools), c.prefix);
        } catch (const Refused& e) {
            report.failures.push_back({path.string(), e.what(), entry.where});
        } catch (const std::exception& e) {
            report.failures.push_back({path.string(), std::string("unexpected error: ") + e.what(), entry.where});
        }
    }
    registry->freeze();
    return registry;
}

} // namespace gatehouse::plugins
