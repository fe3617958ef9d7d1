#include "config/data_folder.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace gatehouse::config {

namespace {

// The fallback data folder when none of HOME, XDG_DATA_HOME and
// GATEHOUSE_DATA_DIR is set (config_loader.cpp, default_data_dir).
bool is_fallback(const std::filesystem::path& data_dir) {
    std::error_code ec;
    const auto fallback = std::filesystem::temp_directory_path(ec) / "gatehouse";
    return !ec && data_dir == fallback;
}

std::string octal(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

} // namespace

void prepare_data_folder(const std::filesystem::path& data_dir) {
    struct stat found {};
    if (::lstat(data_dir.c_str(), &found) != 0) {
        if (errno != ENOENT)
            throw DataFolderUnsafe("cannot look at the data folder " + data_dir.string() + ": " + std::strerror(errno));
        // The folders above are the operator's layout, made with the usual modes.
        std::error_code ec;
        if (data_dir.has_parent_path()) std::filesystem::create_directories(data_dir.parent_path(), ec);
        if (::mkdir(data_dir.c_str(), 0700) != 0 && errno != EEXIST)
            throw DataFolderUnsafe("cannot create the data folder " + data_dir.string() + ": " + std::strerror(errno));
        if (::lstat(data_dir.c_str(), &found) != 0)
            throw DataFolderUnsafe("cannot look at the data folder " + data_dir.string() + ": " + std::strerror(errno));
    }
    const bool own = !S_ISLNK(found.st_mode) && S_ISDIR(found.st_mode) && found.st_uid == ::geteuid();
    if (is_fallback(data_dir) && !own)
        throw DataFolderUnsafe(
            "the data folder " + data_dir.string() +
            " (the fallback when HOME, XDG_DATA_HOME and GATEHOUSE_DATA_DIR are all unset) already exists and is not "
            "this user's own folder: another user could read and change everything the host keeps there. Set "
            "data_dir in the YAML or GATEHOUSE_DATA_DIR to a folder of this user's, or remove that one.");
    if (own && (found.st_mode & 077) != 0)
        spdlog::warn("the data folder {} can be read by other users of this machine (mode {}); it holds callers' "
                     "notes, sessions and tasks: chmod 700 {}",
                     data_dir.string(), octal(found.st_mode), data_dir.string());
}

} // namespace gatehouse::config
