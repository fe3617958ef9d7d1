#include "bot_directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
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

namespace {

std::string system_error(const char* what, const std::filesystem::path& path) {
    return std::string("cannot ") + what + " " + path.string() + ": " + std::strerror(errno);
}

// Creates `dir` and any missing parent, each new one private to this user
// (0700): the folder holds what only a person may change. A folder that
// exists is kept as it is.
bool make_private_directories(const std::filesystem::path& dir, std::string& error) {
    std::filesystem::path made;
    for (const auto& part : dir) {
        made /= part;
        if (::mkdir(made.c_str(), 0700) == 0 || errno == EEXIST) continue;
        error = system_error("create the folder", made);
        return false;
    }
    struct stat status {};
    if (::stat(dir.c_str(), &status) != 0 || !S_ISDIR(status.st_mode)) {
        error = dir.string() + " is not a folder";
        return false;
    }
    return true;
}

bool write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

} // namespace

bool BotDirectory::choose(const std::string& slug, std::string& error) const {
    const auto path = active_bot_file(data_dir_);
    const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    if (!make_private_directories(dir, error)) return false;
    // A name nobody can plant beforehand: mkostemp creates it (O_EXCL, 0600)
    // and never follows a link already there.
    std::string temporary = (dir / (path.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
    if (fd < 0) {
        error = system_error("create a file in", dir);
        return false;
    }
    bool written = write_all(fd, slug + "\n") && ::fsync(fd) == 0;
    if (!written) error = system_error("write", temporary);
    if (::close(fd) != 0 && written) {
        written = false;
        error = system_error("write", temporary);
    }
    if (!written) {
        ::unlink(temporary.c_str());
        return false;
    }
    // Whole or not at all: a call reading the file never sees half a slug.
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        error = system_error("replace", path);
        ::unlink(temporary.c_str());
        return false;
    }
    // The rename itself outlives a crash once the folder is on disk too.
    if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
    return true;
}

} // namespace sessions_bot
