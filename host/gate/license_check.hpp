#pragma once

#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "license/license_source.hpp"

#include <chrono>
#include <functional>
#include <set>
#include <string>

namespace gatehouse::gate {

// The first check of the gate: the tool's family is license-free, or the
// license file (looked up on this request, see LicenseSource) is present,
// signed by a configured vendor key, covers the family and has not expired
// by the clock now. Else, in this order: LICENSE_MISSING, LICENSE_INVALID,
// LICENSE_NOT_COVERED, LICENSE_EXPIRED. Refusals name the family and tell the
// agent to tell the person; paths, keys and the reason a file is invalid go
// to the log only.
class LicenseCheck final : public GateCheck {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;

    LicenseCheck(const config::LicenseSettings& settings, Clock clock = std::chrono::system_clock::now);
    std::optional<Refusal> check(const GateContext& context) override;

    license::LicenseSource& source() { return source_; }

private:
    license::LicenseSource source_;
    std::set<std::string, std::less<>> free_families_;
    Clock clock_;
};

// Puts the license check first in the gate when the configuration has a
// `license:` section; without one no family is license-checked.
void add_license_check(GatePipeline& gate, const config::LicenseSettings& settings);

} // namespace gatehouse::gate
