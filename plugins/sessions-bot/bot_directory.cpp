#include "bot_directory.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace sessions_bot {

bool valid_bot_slug(std::string_view slug) {
    return !slug.empty() && slug.size() <= 128 && std::all_of(slug.begin(), slug.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
}

BotDirectory::BotDirectory(const nlohmann::json& settings, std::filesystem::path data_dir)
    : data_dir_(std::move(data_dir)) {
    const auto bots = settings.value("bots", nlohmann::json::array());
    if (!bots.is_array()) throw std::invalid_argument("settings.bots must be a list of {slug, name, user_seq_id}");
    for (std::size_t i = 0; i < bots.size(); ++i) {
        const auto& entry = bots[i];
        const std::string where = "settings.bots[" + std::to_string(i) + "]";
        if (!entry.is_object() || !entry.value("slug", nlohmann::json()).is_string())
            throw std::invalid_argument(where + " needs a slug");
        Bot bot;
        bot.slug = entry["slug"].get<std::string>();
        if (!valid_bot_slug(bot.slug))
            throw std::invalid_argument(where + ".slug '" + bot.slug +
                                        "' must be 1-128 of lowercase letters, digits, '-' and '_'");
        if (find(bot.slug)) throw std::invalid_argument(where + ".slug '" + bot.slug + "' is listed twice");
        bot.name = entry.value("name", bot.slug);
        if (entry.contains("user_seq_id")) {
            const auto& seq = entry["user_seq_id"];
            // The published get_session_status answers seq_id up to 2^31-1.
            if (!seq.is_number_unsigned() || seq.get<std::uint64_t>() < 1 || seq.get<std::uint64_t>() > 2147483647ull)
                throw std::invalid_argument(where + ".user_seq_id must be an integer from 1 to 2147483647");
            bot.user_seq_id = seq.get<std::uint64_t>();
        }
        bots_.push_back(std::move(bot));
    }
    if (auto chosen = settings.find("active_bot"); chosen != settings.end()) {
        if (!chosen->is_string() || !find(chosen->get<std::string>()))
            throw std::invalid_argument("settings.active_bot must name one of settings.bots");
        default_slug_ = chosen->get<std::string>();
    } else if (!bots_.empty()) {
        default_slug_ = bots_.front().slug;
    }
}

const Bot* BotDirectory::find(std::string_view slug) const {
    for (const auto& bot : bots_)
        if (bot.slug == slug) return &bot;
    return nullptr;
}

const Bot* BotDirectory::active() const {
    std::ifstream file(active_bot_file(data_dir_));
    std::string chosen;
    if (file && std::getline(file, chosen)) {
        while (!chosen.empty() && (chosen.back() == '\r' || chosen.back() == ' '))
            chosen.pop_back();
        return find(chosen);
    }
    return default_slug_.empty() ? nullptr : find(default_slug_);
}

bool BotDirectory::choose(const std::string& slug, std::string& error) const {
    const auto path = active_bot_file(data_dir_);
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    const auto temporary = std::filesystem::path(path.string() + ".tmp");
    {
        std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
        file << slug << "\n";
        if (!file.flush()) {
            error = "cannot write " + temporary.string();
            return false;
        }
    }
    // Whole or not at all: a call reading the file never sees half a slug.
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
        error = "cannot replace " + path.string() + ": " + ec.message();
        return false;
    }
    return true;
}

} // namespace sessions_bot
