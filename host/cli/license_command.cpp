#include "cli/license_command.hpp"

#include "cli/host_setup.hpp"
#include "license/license_signer.hpp"
#include "license/license_source.hpp"
#include "license/license_document.hpp"
#include "license/utc_timestamp.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

namespace gatehouse::cli {

namespace {

using Clock = std::chrono::system_clock;

// "in 3 days", "2 hours ago": how far `when` is from now, roughly.
std::string distance(Clock::time_point when, Clock::time_point now) {
    const bool past = when < now;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(past ? now - when : when - now).count();
    std::string amount;
    if (seconds >= 2 * 86400)
        amount = std::to_string(seconds / 86400) + " days";
    else if (seconds >= 2 * 3600)
        amount = std::to_string(seconds / 3600) + " hours";
    else if (seconds >= 120)
        amount = std::to_string(seconds / 60) + " minutes";
    else
        amount = std::to_string(seconds) + " seconds";
    return past ? amount + " ago" : "in " + amount;
}

int verify(const std::string& file, const std::optional<std::string>& config_file, bool json) {
    const config::Config cfg = load_config(config_file);
    setup_logging("off");
    // The same reading and checking the gate does, so what this says is what
    // the host will decide.
    license::LicenseSource source(file, cfg.license.vendor_keys);
    const auto verdict = source.current();
    const auto now = Clock::now();
    const bool expired = verdict->valid() && verdict->document->expired_at(now);
    const char* status = verdict->status == license::LicenseVerdict::Status::missing ? "missing"
                         : !verdict->valid()                                         ? "invalid"
                         : expired                                                   ? "expired"
                                                                                     : "valid";
    const bool ok = verdict->valid() && !expired;
    const auto* d = verdict->document ? &*verdict->document : nullptr;

    if (json) {
        nlohmann::json out = {{"file", file}, {"status", status}, {"valid", ok}};
        if (!verdict->problem.empty()) out["problem"] = verdict->problem;
        if (d) {
            out["licensee"] = d->licensee;
            out["families"] = d->families;
            out["issued"] = d->issued_text;
            out["expires"] = d->expires_text;
            out["key_id"] = d->key_id;
            out["signature_valid"] = verdict->valid();
        }
        if (verdict->valid()) out["key_fingerprint"] = verdict->key_fingerprint;
        out["free_families"] = cfg.license.free_families;
        out["license_checked"] = cfg.license.configured;
        std::cout << out.dump(2) << "\n";
        return ok ? 0 : 1;
    }

    if (verdict->status == license::LicenseVerdict::Status::missing) {
        std::cout << file << ": no such file\n";
        return 1;
    }
    std::cout << file << ": " << (ok ? "VALID" : expired ? "EXPIRED" : "INVALID") << " license";
    if (!verdict->valid()) std::cout << " — " << verdict->problem;
    std::cout << "\n";
    if (d) {
        const char* unverified = verdict->valid() ? "" : "  (unverified)";
        std::cout << "  licensee   " << d->licensee << unverified << "\n"
                  << "  families   " << license::joined(d->families) << "\n"
                  << "  issued     " << d->issued_text << "\n"
                  << "  expires    " << d->expires_text << " (" << distance(d->expires, now) << ")\n";
        if (verdict->valid())
            std::cout << "  signature  valid: Ed25519 key \"" << d->key_id << "\" (fingerprint "
                      << verdict->key_fingerprint << ")\n";
        else
            std::cout << "  signature  NOT valid (key_id \"" << d->key_id << "\")\n";
    }
    if (!cfg.license.configured)
        std::cout << "  note       the configuration has no license section: this host checks no license\n";
    else if (!cfg.license.free_families.empty())
        std::cout << "  free       " << license::joined(cfg.license.free_families)
                  << " (license-free on this host, whatever the file says)\n";
    if (ok)
        std::cout << "  allows     the tools of " << license::joined(d->families) << " until " << d->expires_text
                  << "\n";
    return ok ? 0 : 1;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::invalid_argument("cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

int sign(const std::map<std::string, std::string>& options) {
    for (const char* required : {"--key", "--key-id", "--licensee", "--families", "--expires"})
        if (!options.count(required)) {
            std::cerr << "gatehouse: license sign needs " << required << "\n";
            return 2;
        }
    license::LicenseDocument d;
    d.licensee = options.at("--licensee");
    std::stringstream families(options.at("--families"));
    for (std::string f; std::getline(families, f, ',');)
        d.families.push_back(f);
    d.issued_text = options.count("--issued") ? options.at("--issued") : license::format_utc_timestamp(Clock::now());
    d.expires_text = options.at("--expires");
    d.key_id = options.at("--key-id");
    try {
        license::sign_license(d, read_file(options.at("--key")));
        const auto text = license::license_file_text(d);
        // Everything the gate will check about the form, checked before anyone relies on the file.
        license::parse_license_document(text);
        // A license cut short by a full disk or a closed pipe would not
        // parse where it ships: a write that failed is this command's failure.
        std::cout << text << std::flush;
        if (!std::cout) {
            std::cerr << "gatehouse: license sign: the license could not be written to the standard output\n";
            return 1;
        }
        return 0;
    } catch (const license::LicenseFormatError& e) {
        std::cerr << "gatehouse: license sign: the license would not be valid: " << e.what() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "gatehouse: license sign: " << e.what() << "\n";
    }
    return 1;
}

} // namespace

int license_command(const std::vector<std::string>& arguments, const std::optional<std::string>& config_file,
                    const std::map<std::string, std::string>& options, bool json) {
    if (arguments.size() == 2 && arguments[0] == "verify") {
        if (!options.empty()) {
            std::cerr << "gatehouse: license verify takes only FILE, --config and --json\n";
            return 2;
        }
        return verify(arguments[1], config_file, json);
    }
    if (arguments.size() == 1 && arguments[0] == "sign") return sign(options);
    std::cerr << "gatehouse: usage: gatehouse license verify FILE [--config YAML] [--json]\n"
                 "       gatehouse license sign --key PRIVATE.pem --key-id ID --licensee NAME --families a,b "
                 "--expires YYYY-MM-DDTHH:MM:SSZ [--issued YYYY-MM-DDTHH:MM:SSZ]\n";
    return 2;
}

} // namespace gatehouse::cli
