#include "protocol/log_level.hpp"

#include <array>

namespace gatehouse::protocol {

namespace {
constexpr std::array<const char*, 8> kNames{"debug", "info",     "notice", "warning",
                                            "error", "critical", "alert",  "emergency"};
}

std::optional<int> parse_log_level(std::string_view name) {
    for (std::size_t i = 0; i < kNames.size(); ++i)
        if (name == kNames[i]) return static_cast<int>(i);
    return std::nullopt;
}

const char* log_level_name(int level) {
    if (level < 0) level = 0;
    if (level >= static_cast<int>(kNames.size())) level = static_cast<int>(kNames.size()) - 1;
    return kNames[static_cast<std::size_t>(level)];
}

} // namespace gatehouse::protocol
