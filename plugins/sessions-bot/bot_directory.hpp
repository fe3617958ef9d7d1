#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sessions_bot {

struct Bot {
    std::string slug; // 1-128 of [a-z0-9-]
    std::string name;
    std::uint64_t user_seq_id = 1; // the bot user the confirmation page approves as
};

// The bots configured in YAML (domains.sessions.settings.bots) and which one
// is active. The active bot is a person's choice, recorded by the family's
// verb `gatehouse bot use SLUG` in <data_dir>/active-bot and read on every call,
// so the choice takes effect without a restart; until someone chooses,
// settings.active_bot (or the first bot) is active.
class BotDirectory {
public:
    BotDirectory() = default;
    // Throws std::invalid_argument with a sentence naming the bad setting.
    BotDirectory(const nlohmann::json& settings, std::filesystem::path data_dir);

    const std::vector<Bot>& bots() const { return bots_; }
    const Bot* find(std::string_view slug) const;

    // The active bot, or nullptr when none is configured or the recorded
    // choice names a bot the YAML no longer has.
    const Bot* active() const;

    // Records `slug` as the person's choice, whole or not at all (a call
    // reading the file never sees half a slug): written to a fresh temporary
    // file of its own (never a name someone could plant a link at), synced,
    // then renamed over the file. The folder is made private (0700) when it
    // does not exist. False, with the sentence in `error`, when the folder or
    // the file cannot be written.
    bool choose(const std::string& slug, std::string& error) const;

    static std::filesystem::path active_bot_file(const std::filesystem::path& data_dir) {
        return data_dir / "active-bot";
    }

private:
    std::vector<Bot> bots_;
    std::string default_slug_;
    std::filesystem::path data_dir_;
};

bool valid_bot_slug(std::string_view slug);

} // namespace sessions_bot
