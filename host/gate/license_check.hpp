#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "license/license_set.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace gatehouse::gate {

// The first check of the gate: the tool's family is license-free, or one of
// the license files (looked up on this request, see LicenseSet) is signed by
// a configured vendor key, covers the family and has not expired by the
// clock now. Else LICENSE_EXPIRED, LICENSE_INVALID, LICENSE_NOT_COVERED or
// LICENSE_MISSING, in the precedence LicenseSet::find documents. Refusals
// name the family and tell the agent to tell the person; paths, keys and the
// reason a file is invalid go to the log only. It decides by the family
// alone, so it also covers gate-exempt tools and a family's resources,
// prompts and completions; only the host's own tools (call_tool, the job
// tools) need no license.
class LicenseCheck final : public GateCheck {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;

    LicenseCheck(const config::LicenseSettings& settings, Clock clock = std::chrono::system_clock::now);
    std::optional<Refusal> check(const GateContext& context) override;
    bool by_family() const override { return true; }
    std::optional<Refusal> check_family(const std::string& family, std::string_view what) override;

    // Which file covers `family` now, for the operator (start-up log,
    // `gatehouse plugins`): {license: free|covered|missing|not_covered|
    // expired|invalid, file?, expires?}.
    nlohmann::json coverage(const std::string& family);

    license::LicenseSet& licenses() { return licenses_; }

private:
    // The refusal for an answer that is not `covered`.
    Refusal refusal_for(const std::string& family, std::string_view what, const license::LicenseSet::Answer& answer);

    license::LicenseSet licenses_;
    std::set<std::string, std::less<>> free_families_;
    Clock clock_;
};

// Puts the license check first in the gate when the configuration has a
// `license:` section (without one no family is license-checked), and logs
// which file covers each of `families`.
void add_license_check(GatePipeline& gate, const config::LicenseSettings& settings,
                       const std::vector<std::string>& families = {});

// The files `license.file` and `license.files` name, in that order.
std::vector<std::filesystem::path> listed_license_files(const config::LicenseSettings& settings);

} // namespace gatehouse::gate
