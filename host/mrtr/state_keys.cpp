#include "mrtr/state_keys.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace gatehouse::mrtr {

std::shared_ptr<const RequestStateSealer> make_request_state_sealer(const config::InputRequestSettings& settings,
                                                                    const std::string& server_name) {
    std::vector<std::string> keys = settings.state_keys;
    if (const char* env = std::getenv(kStateKeyVariable); env && *env) {
        keys.clear();
        std::string_view rest(env);
        for (std::size_t n = 1; !rest.empty(); ++n) {
            const auto comma = rest.find(',');
            const std::string_view item = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            auto key = RequestStateSealer::parse_key(item);
            if (!key)
                throw std::runtime_error(std::string(kStateKeyVariable) + ": key " + std::to_string(n) +
                                         " is not base64 of exactly 32 bytes (openssl rand -base64 32)");
            keys.push_back(std::move(*key));
        }
    }
    auto sealer = std::make_shared<const RequestStateSealer>(std::move(keys), server_name,
                                                             std::chrono::milliseconds(settings.state_ttl_ms));
    if (sealer->ephemeral())
        spdlog::warn("no requestState key configured (input_requests.state_keys or {}): this process made its own, "
                     "so several instances behind one address reject each other's requestState, and a restart "
                     "voids every requestState a client holds",
                     kStateKeyVariable);
    return sealer;
}

} // namespace gatehouse::mrtr
