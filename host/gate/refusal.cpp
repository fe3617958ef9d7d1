#include "gate/refusal.hpp"

namespace gatehouse::gate {

nlohmann::json Refusal::to_tool_result() const {
    nlohmann::json structured = {{"code", code}, {"message", message}, {"next", next}};
    return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", code + ": " + message}}})},
            {"structuredContent", std::move(structured)},
            {"isError", true}};
}

} // namespace gatehouse::gate
