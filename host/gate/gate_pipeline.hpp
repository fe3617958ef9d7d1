#pragma once

#include "auth/principal.hpp"
#include "gate/refusal.hpp"
#include "plugins/tool.hpp"
#include "session/session.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::gate {

// What the checks learned on the way, for the later checks and the call:
// the session check fills `session`, and the plugin's call context carries
// its view of it. Shared with the session table's decoded records, never
// changed.
struct GateFindings {
    std::shared_ptr<const session::Session> session;
};

// What one check may look at.
struct GateContext {
    const plugins::Tool& tool;
    const auth::Principal& principal;
    const nlohmann::json& arguments;
    GateFindings* findings = nullptr; // null: the caller wants no findings (a check then refuses)
};

// One check of the gate. Decides only; a check that cannot decide (a file
// unreadable, a backend down) refuses with its own code and logs why.
class GateCheck {
public:
    virtual ~GateCheck() = default;
    virtual std::optional<Refusal> check(const GateContext& context) = 0;
    // A check that decides by the family alone (the license) also runs, as
    // check(), for a plugin's gate-exempt tools, and as check_family()
    // before a family's resources, prompts and completions; `what` names the
    // thing asked for ("Resource 'x'").
    virtual bool by_family() const { return false; }
    virtual std::optional<Refusal> check_family(const std::string& /*family*/, std::string_view /*what*/) {
        return std::nullopt;
    }
};

// The ordered checks every gated tools/call passes before its plugin runs.
// The first refusal wins. A plugin's gate-exempt tools (the session
// family's) pass only the checks by family (the license): they need no
// session. The host's own tools (call_tool, the job tools: no plugin) belong
// to no family and pass none; what call_tool forwards passes the whole gate.
// make_gate (gate/make_gate.hpp) is where the order is written.
class GatePipeline {
public:
    void add(std::unique_ptr<GateCheck> check) { checks_.push_back(std::move(check)); }

    std::optional<Refusal> check(const GateContext& context) const;
    // The checks by family alone, for what is not a tool call: a resource
    // read, a prompt, a completion.
    std::optional<Refusal> check_family(const std::string& family, std::string_view what) const;

    std::size_t size() const { return checks_.size(); }

private:
    std::vector<std::unique_ptr<GateCheck>> checks_;
};

} // namespace gatehouse::gate
