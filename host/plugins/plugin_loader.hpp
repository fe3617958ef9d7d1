#pragma once

#include "config/config.hpp"
#include "plugins/tool_registry.hpp"

#include <boost/dll/shared_library.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::plugins {

// How an upstream family is named where a plugin would be by its file: its
// load failure, the claim of its names, the plugins listing.
inline std::string upstream_label(std::string_view name) {
    return "upstream '" + std::string(name) + "'";
}

// One plugin that did not load: the file, and why, in a sentence an operator
// can act on.
struct LoadFailure {
    std::string path; // a plugin's file, or upstream_label(name)
    std::string reason;
    config::SourceLocation where; // the plugins or upstreams entry in the config that named it
    bool upstream = false;
    std::string subject() const { return upstream ? path : "plugin " + path; }
};

struct DisabledFamily {
    std::string family;
    std::string path;
};

struct LoadReport {
    std::vector<LoadFailure> failures;
    std::vector<DisabledFamily> disabled;
    // Upstream families served with nothing listed yet: their servers could
    // not be reached (LoadOptions::wait_for_upstreams), and why.
    std::vector<LoadFailure> waiting;
};

struct LoadOptions {
    // An upstream that cannot be reached is kept as a family with nothing
    // listed, connecting with backoff, instead of failing to load (serve
    // does so; a one-shot command reports it).
    bool wait_for_upstreams = false;
};

// Loads every plugin the config lists, checks each descriptor fully before
// running the plugin's init, and builds the frozen registry from those that
// pass. A plugin that fails is reported and left out; the others are served.
class PluginLoader {
public:
    static std::unique_ptr<ToolRegistry> load(const config::Config& config, LoadReport& report,
                                              const LoadOptions& options = {});

    // An upstreams entry added while serving (a configuration re-read):
    // connected (or waiting for its server); null when its domain is
    // disabled. Throws std::runtime_error with the sentence for the log,
    // also once `abandoned` says the host stops (polled while connecting).
    static std::shared_ptr<const FamilyEntry> open_upstream(const config::UpstreamEntry& entry,
                                                            const config::Config& config,
                                                            std::function<bool()> abandoned = {});
    // Throws std::runtime_error, naming the clash, when `family` would take
    // a name (its own, a tool's, a URI's, a prompt's) a family of `serving` has.
    static void check_joins(const FamilyEntry& family, const ToolRegistry& serving);

    // An upstream family's entry made again from what its server offers now
    // (`family` is its entry in `serving`). What would take a name another
    // family of `serving` has is left out and logged.
    static std::shared_ptr<const FamilyEntry> relist_upstream(const FamilyEntry& family, const config::Config& config,
                                                              const ToolRegistry& serving);
};

// `serving` with `family` in place of the family called `name` (added when
// there is none), or without it when `family` is null.
std::shared_ptr<const ToolRegistry> with_family(const ToolRegistry& serving, std::string_view name,
                                                std::shared_ptr<const FamilyEntry> family);

// A plugin's library, opened, and the descriptor its entry returned for
// `api` (not yet checked). Throws std::runtime_error with the sentence the
// load report shows. The host opens a library so; a family's own process
// (isolation: process) opens it the same way there.
struct OpenedLibrary {
    boost::dll::shared_library library;
    const gh_plugin_desc* descriptor = nullptr;
};
OpenedLibrary open_library(const std::filesystem::path& path, const gh_host_api* api);

// Where the loader looks for a plugins entry's file: a bare file name in
// plugin_dir, anything else as written (already resolved against the config).
std::filesystem::path resolve_plugin_path(const config::PluginEntry& entry, const config::Config& config);

// A name a tool or prompt may be published under: 1 to 64 letters, digits,
// '_', '-' or '.'. Upstream families check the names their servers list by it.
bool valid_tool_name(std::string_view name);

// Reads one tool descriptor through read_abi_struct and checks everything in
// it that needs no loaded library: name, flags, risk, the JSON fields and the
// schemas (compiled). `raw` must span its own struct_size bytes, and its gh_str
// fields must point at readable memory. Throws std::runtime_error with the
// sentence the load report shows. Exposed for tests and the descriptor fuzzer.
std::unique_ptr<Tool> read_tool_descriptor(const gh_tool_desc* raw, std::size_t index, const std::string& prefix,
                                           bool sessions);

// The same for what ABI 1.2 added: a resource (its URI, name, MIME type,
// annotations), a resource template (the template compiled) and a prompt (its
// name, with the domain prefix, and its arguments). Same contract as above.
std::unique_ptr<Resource> read_resource_descriptor(const gh_resource_desc* raw, std::size_t index);
std::unique_ptr<ResourceTemplate> read_resource_template_descriptor(const gh_resource_template_desc* raw,
                                                                    std::size_t index);
std::unique_ptr<Prompt> read_prompt_descriptor(const gh_prompt_desc* raw, std::size_t index, const std::string& prefix);

} // namespace gatehouse::plugins
