#pragma once

#include "schema/json_schema.hpp"
#include "schema/param_headers.hpp"

#include <gatehouse/plugin.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::plugins {

class LoadedPlugin;

enum class Risk { read, write, money, destructive };

const char* risk_name(Risk risk);

// One tool as the host knows it: the plugin's declaration, checked and
// compiled at load time, plus how to reach the plugin.
// How a tool's recent calls went. A transport runs a call on a thread that
// also serves the network (HttpService::run_call) or reads stdin
// (place_stdio_call) only while the tool is quick: kStreak of its calls in a
// row returned within kQuick, and since then at most about one call in
// kStreak has not. A tool that waits on anything (a person's answer, a slow
// service) never gets there; two slow calls in a row take it back out. A
// lone slow call of a quick tool (a busy machine's pause) does not, so a
// tool whose calls are quick but not every time keeps being run in place.
struct CallPace {
    static constexpr std::chrono::microseconds kQuick{500};
    static constexpr std::uint32_t kStreak = 16;

    bool quick() const { return score_.load(std::memory_order_relaxed) >= kStreak; }
    // A slow call halves the score, a quick one adds one, up to twice kStreak.
    void record(std::chrono::steady_clock::duration took) {
        const std::uint32_t score = score_.load(std::memory_order_relaxed);
        if (took >= kQuick)
            score_.store(score / 2, std::memory_order_relaxed);
        else if (score < 2 * kStreak)
            score_.store(score + 1, std::memory_order_relaxed);
    }

private:
    std::atomic<std::uint32_t> score_{0};
};

// The names of the host's own tools: protocol::ToolDisclosure's meta tools
// and job tools. No family's tool may be published under one: the host
// resolves a family's tool first, so it would take the host's calls (an
// agent's call_tool to any family, say). ToolDisclosure checks its names
// against this list when it compiles.
inline constexpr std::string_view kHostToolNames[] = {"list_domains", "load_domain", "describe_tool", "call_tool",
                                                      "job_status",   "job_result",  "job_cancel"};
constexpr bool host_tool_name(std::string_view name) {
    for (std::string_view reserved : kHostToolNames)
        if (name == reserved) return true;
    return false;
}

// Whether a tool's calls may run as tasks (the Tasks extension, tasks/).
enum class TaskSupport { none, optional, required };

struct Tool {
    std::string name;        // the published name (family prefix + the plugin's own name)
    std::string plugin_name; // the name the plugin declared
    std::string family;
    std::string title;
    std::string description;
    std::shared_ptr<const schema::JsonSchema> input_schema;
    // Its x-mcp-header annotations (the HTTP transport mirrors them as Mcp-Param-* headers).
    std::vector<schema::ParamHeader> param_headers;
    std::shared_ptr<const schema::JsonSchema> output_schema; // null when the tool declares none
    nlohmann::json annotations;                              // object, possibly empty
    std::string scope;
    std::vector<std::string> required_scopes;
    Risk risk = Risk::read;
    std::string rules;
    bool gate_exempt = false;
    bool reads_critical = false;                  // runs while critical notes are unread (GH_TOOL_READS_CRITICAL)
    TaskSupport task_support = TaskSupport::none; // gh_tool_desc.task_support (ABI 1.7)
    bool asks_before_task = false;                // GH_TOOL_ASKS_BEFORE_TASK

    gh_tool_fn call = nullptr;
    void* tool_data = nullptr;
    LoadedPlugin* plugin = nullptr;

    // The MCP Tool object as tools/list publishes it, built once.
    nlohmann::json listing;

    std::shared_ptr<CallPace> pace = std::make_shared<CallPace>();
};

} // namespace gatehouse::plugins
