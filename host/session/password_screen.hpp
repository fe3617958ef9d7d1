#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::session {

// Looks for store passwords in what a family allowed them is about to say:
// a tool's answer is withheld when it holds one, a log line has each masked.
// Catches a family's mistakes (a password echoed, logged, put in an error);
// it cannot stop a family that encodes the password on purpose.
class PasswordScreen {
public:
    PasswordScreen() = default;
    explicit PasswordScreen(std::vector<std::string> passwords);

    void add(std::string password);
    bool empty() const { return passwords_.empty(); }

    bool found_in(std::string_view text) const;
    // In any string or object key, at any depth: JSON escapes are already undone.
    bool found_in(const nlohmann::json& value) const;

    // `text` with every password replaced by ***.
    std::string masked(std::string_view text) const;

    static constexpr std::string_view kMask = "***";

private:
    std::vector<std::string> passwords_; // longest first, so a password inside another is masked whole
};

} // namespace gatehouse::session
