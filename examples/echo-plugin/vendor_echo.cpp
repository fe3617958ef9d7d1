/* Family "vendor_echo": a vendor's starting point for a Gatehouse plugin.
 *   vendor_echo   read   returns the text it is given, plain and structured
 */
#include <gatehouse/plugin.hpp>

#include <string>

static gh::Plugin plugin{{.name = "example-vendor-echo", .version = "1.0.0", .family = "vendor_echo"}};

static const auto& echo = plugin.tool({
    .name = "vendor_echo",
    .title = "Echo",
    .description = "Returns the text it is given.",
    .input_schema = R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})",
    .output_schema = R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})",
    .risk = gh::Risk::read,
    .handler =
        [](gh::Call& call) {
            auto text = call.arg<std::string>("text");
            return gh::Result::structured({{"text", text}}, text);
        },
});

GH_EXPORT_PLUGIN(plugin)
