#include "session/store_credentials.hpp"

#include "session/bounded_file.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cstdlib>

namespace gatehouse::session {

namespace {

// A credentials file holds one line; a desktop program's settings file holds
// much else besides its saved logins. The bounds are what a file at the path
// may cost each question.
constexpr std::size_t kMaxCredentialsFileBytes = 64 * 1024;
constexpr std::size_t kMaxProgramSettingsBytes = 1024 * 1024;

// The whole file, checked on the descriptor that is read (no window between
// the check and the read). std::nullopt when it does not exist and
// `missing_is_empty`.
std::optional<std::string> read_private_file(const std::filesystem::path& file, const std::string& what,
                                             std::size_t max_bytes, bool missing_is_empty) {
    std::optional<BoundedFile> read;
    try {
        read = read_bounded_file(file, max_bytes);
    } catch (const BoundedFileRefused& e) {
        throw CredentialsRefused(what + " " + file.string() + " " + e.what());
    }
    if (!read) {
        if (missing_is_empty) return std::nullopt;
        throw CredentialsRefused(what + " " + file.string() + " does not exist");
    }
    if (read->mode & (S_IRWXG | S_IRWXO))
        throw CredentialsRefused(what + " " + file.string() + " is open to group or others; run chmod 600 on it");
    return std::move(read->text);
}

// The saved logins of the program's settings file; empty when it has none.
std::vector<StoreLogin> saved_logins(const std::filesystem::path& file) {
    const std::string what = "the program settings file";
    auto text = read_private_file(file, what, kMaxProgramSettingsBytes, true);
    if (!text) return {}; // the program has saved nothing here yet
    // The parser's own message may quote the file, so it is never passed on.
    nlohmann::json settings = nlohmann::json::parse(*text, nullptr, false);
    if (settings.is_discarded() || !settings.is_object())
        throw CredentialsRefused(what + " " + file.string() + " is not a JSON object");
    auto list = settings.find("saved_logins");
    if (list == settings.end() || list->is_null()) return {};
    if (!list->is_array())
        throw CredentialsRefused(what + " " + file.string() + " has a \"saved_logins\" that is not a list");
    std::vector<StoreLogin> out;
    for (const auto& entry : *list) {
        const auto field = [&](const char* key) {
            auto it = entry.is_object() ? entry.find(key) : entry.end();
            if (!entry.is_object() || it == entry.end() || !it->is_string())
                throw CredentialsRefused(what + " " + file.string() +
                                         " has a saved login without the strings store, user and password");
            return it->get<std::string>();
        };
        StoreLogin login{field("store"), field("user"), field("password")};
        if (!login.password.empty()) out.push_back(std::move(login));
    }
    return out;
}

// The first line of the credentials file.
std::string credentials_line(const std::filesystem::path& file) {
    const std::string what = "the credentials file";
    std::string text = *read_private_file(file, what, kMaxCredentialsFileBytes, false);
    std::string line = text.substr(0, text.find('\n'));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) throw CredentialsRefused(what + " " + file.string() + " is empty");
    return line;
}

std::optional<std::string> environment_password() {
    const char* env = std::getenv("GATEHOUSE_STORE_PASSWORD");
    if (!env || !*env) return std::nullopt;
    return std::string(env);
}

} // namespace

StoreCredentials::StoreCredentials(const config::SessionSettings& settings, bool environment_allowed)
    : program_settings_file_(settings.program_settings_file), credentials_file_(settings.credentials_file),
      environment_allowed_(environment_allowed) {}

std::optional<StoreLogin> StoreCredentials::login_for(const std::string& store, const std::string& user) const {
    if (!program_settings_file_.empty() && !store.empty())
        for (auto& login : saved_logins(program_settings_file_))
            if (login.store == store && login.user == user) return std::move(login);
    if (!credentials_file_.empty()) return StoreLogin{store, user, credentials_line(credentials_file_)};
    if (environment_allowed_)
        if (auto password = environment_password()) return StoreLogin{store, user, std::move(*password)};
    return std::nullopt;
}

std::vector<std::string> StoreCredentials::every_password() const {
    std::vector<std::string> out;
    if (!program_settings_file_.empty()) try {
            for (auto& login : saved_logins(program_settings_file_))
                out.push_back(std::move(login.password));
        } catch (const CredentialsRefused&) {
        }
    if (!credentials_file_.empty()) try {
            out.push_back(credentials_line(credentials_file_));
        } catch (const CredentialsRefused&) {
        }
    if (environment_allowed_)
        if (auto password = environment_password()) out.push_back(std::move(*password));
    return out;
}

} // namespace gatehouse::session
