#include "session/store_password.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

namespace gatehouse::session {

std::optional<StorePassword> StorePassword::load(const config::SessionSettings& settings) {
    if (!settings.credentials_file.empty()) {
        const auto& file = settings.credentials_file;
        struct stat info {};
        if (::stat(file.c_str(), &info) != 0)
            throw CredentialsRefused("the credentials file " + file.string() + " cannot be read");
        if (info.st_mode & (S_IRWXG | S_IRWXO))
            throw CredentialsRefused("the credentials file " + file.string() +
                                     " is open to group or others; run chmod 600 on it");
        std::ifstream in(file, std::ios::binary);
        std::string line;
        if (!in || !std::getline(in, line))
            throw CredentialsRefused("the credentials file " + file.string() + " cannot be read");
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) throw CredentialsRefused("the credentials file " + file.string() + " is empty");
        return StorePassword(std::move(line));
    }
    if (const char* env = std::getenv("GATEHOUSE_STORE_PASSWORD"); env && *env) return StorePassword(env);
    return std::nullopt;
}

} // namespace gatehouse::session
