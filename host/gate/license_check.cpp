#include "gate/license_check.hpp"

#include "license/license_document.hpp"
#include "license/utc_timestamp.hpp"

#include <spdlog/spdlog.h>

namespace gatehouse::gate {

namespace {

using Outcome = license::LicenseSet::Answer::Outcome;

Refusal refusal(std::string_view code, const std::string& family, std::string message,
                nlohmann::json next = nlohmann::json::object()) {
    next["action"] = "tell_the_person";
    next["family"] = family;
    return Refusal{std::string(code), std::move(message), std::move(next)};
}

const char* outcome_name(Outcome outcome) {
    switch (outcome) {
    case Outcome::covered: return "covered";
    case Outcome::missing: return "missing";
    case Outcome::not_covered: return "not_covered";
    case Outcome::expired: return "expired";
    case Outcome::invalid: return "invalid";
    }
    return "invalid";
}

} // namespace

std::vector<std::filesystem::path> listed_license_files(const config::LicenseSettings& settings) {
    std::vector<std::filesystem::path> files;
    if (!settings.file.empty()) files.push_back(settings.file);
    files.insert(files.end(), settings.files.begin(), settings.files.end());
    return files;
}

LicenseCheck::LicenseCheck(const config::LicenseSettings& settings, Clock clock)
    : licenses_(listed_license_files(settings), settings.directory, settings.vendor_keys),
      free_families_(settings.free_families.begin(), settings.free_families.end()), clock_(std::move(clock)) {}

std::optional<Refusal> LicenseCheck::check(const GateContext& context) {
    const std::string& family = context.tool.family;
    if (free_families_.count(family)) return std::nullopt;
    const auto answer = licenses_.find(family, clock_());
    if (answer.outcome == Outcome::covered) return std::nullopt;
    return refusal_for(family, "Tool '" + context.tool.name + "'", answer);
}

std::optional<Refusal> LicenseCheck::check_family(const std::string& family, std::string_view what) {
    if (free_families_.count(family)) return std::nullopt;
    const auto answer = licenses_.find(family, clock_());
    if (answer.outcome == Outcome::covered) return std::nullopt;
    return refusal_for(family, what, answer);
}

Refusal LicenseCheck::refusal_for(const std::string& family, std::string_view what,
                                  const license::LicenseSet::Answer& answer) {
    const std::string about = std::string(what) + " belongs to the family '" + family + "', ";
    switch (answer.outcome) {
    case Outcome::covered:
    case Outcome::missing:
        return refusal(refusal_code::license_missing, family,
                       about +
                           "which needs a license, and this host has none installed. Nothing ran. Tell the "
                           "person: the operator must install a license file covering '" +
                           family + "'.");
    case Outcome::invalid:
        return refusal(refusal_code::license_invalid, family,
                       about +
                           "which needs a license, and the installed license file is not valid (the host's log "
                           "says why). Nothing ran. Tell the person: the operator must install a valid license "
                           "covering '" +
                           family + "' (gatehouse license verify FILE explains a file).");
    case Outcome::not_covered:
        return refusal(refusal_code::license_not_covered, family,
                       about +
                           "and no installed license covers it. Nothing ran. Tell the person: the operator must "
                           "install a license that covers '" +
                           family + "'.",
                       {{"licensed_families", answer.licensed_families}});
    case Outcome::expired: break;
    }
    const auto& document = *answer.verdict->document;
    return refusal(refusal_code::license_expired, family,
                   about + "and the license covering it expired at " + document.expires_text +
                       ". Nothing ran. Tell the person: the operator must renew the license.",
                   {{"expired", document.expires_text}});
}

nlohmann::json LicenseCheck::coverage(const std::string& family) {
    if (free_families_.count(family)) return {{"license", "free"}};
    const auto answer = licenses_.find(family, clock_());
    nlohmann::json out = {{"license", outcome_name(answer.outcome)}};
    if (answer.source) out["file"] = answer.file().string();
    if (answer.verdict && answer.verdict->document) out["expires"] = answer.verdict->document->expires_text;
    return out;
}

void add_license_check(GatePipeline& gate, const config::LicenseSettings& settings,
                       const std::vector<std::string>& families) {
    if (!settings.configured) {
        spdlog::info("no license section in the configuration: no family is license-checked");
        return;
    }
    std::vector<std::string> files;
    for (const auto& f : listed_license_files(settings))
        files.push_back(f.string());
    spdlog::info("license: file(s) [{}]{}, {} vendor key(s), license-free families [{}]", license::joined(files),
                 settings.directory.empty() ? "" : ", directory " + settings.directory.string(),
                 settings.vendor_keys.size(), license::joined(settings.free_families));
    auto check = std::make_unique<LicenseCheck>(settings);
    for (const auto& family : families) {
        const auto c = check->coverage(family);
        const std::string state = c["license"];
        if (state == "free") continue;
        if (state == "covered")
            spdlog::info("license: family '{}' is covered by {} until {}", family, c["file"].get<std::string>(),
                         c["expires"].get<std::string>());
        else
            spdlog::warn("license: family '{}' is not served now: {}{}", family, state,
                         c.contains("file") ? " (" + c["file"].get<std::string>() + ")" : "");
    }
    gate.add(std::move(check));
}

} // namespace gatehouse::gate
