#include "cli/bot_command.hpp"

#include "cli/host_setup.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace gatehouse::cli {

namespace {

constexpr const char* kFamily = "sessions";

std::filesystem::path active_bot_file(const config::Config& cfg) {
    return cfg.data_dir / kFamily / "active-bot";
}

std::string recorded_choice(const config::Config& cfg) {
    std::ifstream file(active_bot_file(cfg));
    std::string slug;
    if (file) std::getline(file, slug);
    return slug;
}

} // namespace

int bot_command(const std::vector<std::string>& positional, const std::optional<std::string>& config_file) {
    const config::Config cfg = load_config(config_file);
    nlohmann::json settings = nlohmann::json::object();
    if (auto domain = cfg.domains.find(kFamily); domain != cfg.domains.end()) settings = domain->second.settings;
    const auto bots = settings.value("bots", nlohmann::json::array());
    const auto configured = [&](const std::string& slug) {
        for (const auto& bot : bots)
            if (bot.is_object() && bot.value("slug", std::string()) == slug) return true;
        return false;
    };
    if (positional.empty()) {
        std::string active = recorded_choice(cfg);
        if (active.empty()) active = settings.value("active_bot", bots.empty() ? "" : bots[0].value("slug", ""));
        for (const auto& bot : bots) {
            const auto slug = bot.value("slug", std::string());
            std::cout << (slug == active ? "* " : "  ") << slug << "  " << bot.value("name", slug) << "\n";
        }
        if (bots.empty()) std::cout << "no bots configured (domains.sessions.settings.bots)\n";
        return 0;
    }
    if (positional.size() != 2 || positional[0] != "use") {
        std::cerr << "gatehouse: usage: gatehouse bot use SLUG [--config FILE]\n";
        return 2;
    }
    const std::string& slug = positional[1];
    if (!configured(slug)) {
        std::cerr << "gatehouse: no bot '" << slug << "' under domains.sessions.settings.bots in " << cfg.source
                  << "; `gatehouse bot` lists them\n";
        return 1;
    }
    const auto path = active_bot_file(cfg);
    std::filesystem::create_directories(path.parent_path());
    const auto temporary = std::filesystem::path(path.string() + ".tmp");
    {
        std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
        file << slug << "\n";
        if (!file.flush()) {
            std::cerr << "gatehouse: cannot write " << temporary.string() << "\n";
            return 1;
        }
    }
    // Whole or not at all: a call reading the file never sees half a slug.
    std::filesystem::rename(temporary, path);
    std::cout << "active bot: " << slug << "\n";
    return 0;
}

} // namespace gatehouse::cli
