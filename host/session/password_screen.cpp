#include "session/password_screen.hpp"

#include <algorithm>

namespace gatehouse::session {

PasswordScreen::PasswordScreen(std::vector<std::string> passwords) {
    for (auto& p : passwords)
        add(std::move(p));
}

void PasswordScreen::add(std::string password) {
    if (password.empty() || std::find(passwords_.begin(), passwords_.end(), password) != passwords_.end()) return;
    passwords_.push_back(std::move(password));
    std::stable_sort(passwords_.begin(), passwords_.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

bool PasswordScreen::found_in(std::string_view text) const {
    return std::any_of(passwords_.begin(), passwords_.end(),
                       [&](const std::string& p) { return text.find(p) != std::string_view::npos; });
}

bool PasswordScreen::found_in(const nlohmann::json& value) const {
    if (value.is_string()) return found_in(std::string_view(value.get_ref<const std::string&>()));
    if (value.is_array())
        return std::any_of(value.begin(), value.end(), [&](const nlohmann::json& v) { return found_in(v); });
    if (value.is_object()) {
        for (const auto& [key, v] : value.items())
            if (found_in(std::string_view(key)) || found_in(v)) return true;
    }
    return false;
}

std::string PasswordScreen::masked(std::string_view text) const {
    std::string out(text);
    for (const auto& p : passwords_) {
        for (std::size_t at = out.find(p); at != std::string::npos; at = out.find(p, at + kMask.size()))
            out.replace(at, p.size(), kMask);
    }
    return out;
}

} // namespace gatehouse::session
