#include "gate/license_check.hpp"

#include "license/utc_timestamp.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::gate {

namespace {

Refusal refusal(std::string_view code, const std::string& family, std::string message,
                nlohmann::json next = nlohmann::json::object()) {
    next["action"] = "tell_the_person";
    next["family"] = family;
    return Refusal{std::string(code), std::move(message), std::move(next)};
}

} // namespace

LicenseCheck::LicenseCheck(const config::LicenseSettings& settings, Clock clock)
    : source_(settings.file, settings.vendor_keys),
      free_families_(settings.free_families.begin(), settings.free_families.end()), clock_(std::move(clock)) {}

std::optional<Refusal> LicenseCheck::check(const GateContext& context) {
    const std::string& family = context.tool.family;
    if (free_families_.count(family)) return std::nullopt;
    const auto verdict = source_.current();
    const std::string about = "Tool '" + context.tool.name + "' belongs to the family '" + family + "', ";
    switch (verdict->status) {
    case license::LicenseVerdict::Status::missing:
        return refusal(refusal_code::license_missing, family,
                       about +
                           "which needs a license, and this host has none installed. Nothing ran. Tell the "
                           "person: the operator must install a license file covering '" +
                           family + "'.");
    case license::LicenseVerdict::Status::invalid:
        return refusal(refusal_code::license_invalid, family,
                       about +
                           "which needs a license, and the installed license file is not valid (the host's log "
                           "says why). Nothing ran. Tell the person: the operator must install a valid license "
                           "covering '" +
                           family + "' (gatehouse license verify FILE explains a file).");
    case license::LicenseVerdict::Status::valid: break;
    }
    const auto& document = *verdict->document;
    if (!document.covers(family))
        return refusal(refusal_code::license_not_covered, family,
                       about +
                           "and the installed license does not cover it. Nothing ran. Tell the person: the "
                           "operator must install a license that covers '" +
                           family + "'.",
                       {{"licensed_families", document.families}});
    if (document.expired_at(clock_()))
        return refusal(refusal_code::license_expired, family,
                       about + "and the license covering it expired at " + document.expires_text +
                           ". Nothing ran. Tell the person: the operator must renew the license.",
                       {{"expired", document.expires_text}});
    return std::nullopt;
}

void add_license_check(GatePipeline& gate, const config::LicenseSettings& settings) {
    if (!settings.configured) {
        spdlog::info("no license section in the configuration: no family is license-checked");
        return;
    }
    std::string free;
    for (const auto& f : settings.free_families)
        free += (free.empty() ? "" : ", ") + f;
    spdlog::info("license: file {}, {} vendor key(s), license-free families [{}]", settings.file.string(),
                 settings.vendor_keys.size(), free);
    gate.add(std::make_unique<LicenseCheck>(settings));
}

} // namespace gatehouse::gate
