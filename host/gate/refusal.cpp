#include "gate/refusal.hpp"

namespace gatehouse::gate {

nlohmann::json Refusal::to_tool_result() const {
    nlohmann::json structured = {{"code", code}, {"message", message}, {"next", next}};
    if (retry_after_ms) structured["next"]["retryAfterMs"] = *retry_after_ms;
    return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", code + ": " + message}}})},
            {"structuredContent", std::move(structured)},
            {"isError", true}};
}

} // namespace gatehouse::gate
