#pragma once

#include "isolation/frame_channel.hpp"

#include <gatehouse/plugin.h>

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::isolation {

// A family's descriptor across the channel. The child reads the plugin's
// own (every struct through read_abi_struct, so an older plugin reads as
// it does in process) and encodes it; the host decodes it into a
// ProxyDescriptor whose functions forward each call to the child. The host
// checks that descriptor exactly as it checks one a library returned.

// The child's side: the plugin's descriptor and its tables, each struct
// read through read_abi_struct. Throws std::runtime_error naming the struct
// that cannot be read.
struct PluginTables {
    gh_plugin_desc desc{};
    std::vector<gh_tool_desc> tools;
    std::vector<gh_resource_desc> resources;
    std::vector<gh_resource_template_desc> templates;
    std::vector<gh_prompt_desc> prompts;
    std::vector<gh_page_desc> pages;
    std::vector<gh_command_desc> commands;
};
PluginTables read_plugin_tables(const gh_plugin_desc* raw);
// The tables as bytes for the host.
std::string encode_descriptor(const PluginTables& tables);

// What a proxied function asks of the process it forwards to.
class ProxiedCalls {
public:
    virtual ~ProxiedCalls() = default;
    // Runs `kind` on descriptor entry `index` in the child with `fields`;
    // the answer goes to out (a command's error text to err). call may be
    // null (critical items, commands).
    virtual int32_t invoke(CallKind kind, std::uint32_t index, gh_call* call, std::vector<std::string> fields,
                           gh_sink* out, gh_sink* err) = 0;
};

// The host's side: a gh_plugin_desc whose every function runs in the child.
// Its plugin state (what LoadedPlugin passes the functions) must be the
// ProxiedCalls; init and shutdown are left null, since the process runs them.
class ProxyDescriptor {
public:
    // Throws BrokenChannel when the bytes are not a descriptor.
    ProxyDescriptor(std::string_view bytes, ProxiedCalls& calls);
    ProxyDescriptor(const ProxyDescriptor&) = delete;
    ProxyDescriptor& operator=(const ProxyDescriptor&) = delete;

    const gh_plugin_desc* descriptor() const { return &desc_; }

    // Where a proxied function finds its process and its entry.
    struct Target {
        ProxiedCalls* calls;
        std::uint32_t index;
    };
    // A descriptor entry's own data (tool_data and the like) is its Target.
    static const Target& target_of(void* data) { return *static_cast<const Target*>(data); }

private:
    gh_plugin_desc desc_{};
    std::deque<std::string> strings_;
    std::deque<Target> targets_;
    std::vector<gh_tool_desc> tools_;
    std::vector<gh_resource_desc> resources_;
    std::vector<gh_resource_template_desc> templates_;
    std::vector<gh_prompt_desc> prompts_;
    std::vector<gh_page_desc> pages_;
    std::vector<gh_command_desc> commands_;
    std::vector<const gh_tool_desc*> tool_table_;
    std::vector<const gh_resource_desc*> resource_table_;
    std::vector<const gh_resource_template_desc*> template_table_;
    std::vector<const gh_prompt_desc*> prompt_table_;
    std::vector<const gh_page_desc*> page_table_;
    std::vector<const gh_command_desc*> command_table_;
    gh_str keep(std::string text);
};

} // namespace gatehouse::isolation
