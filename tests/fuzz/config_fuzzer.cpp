// YAML text through the config loader. Any input either loads or is refused
// with a ConfigError; nothing else may escape.
#include "config/config_loader.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view yaml(reinterpret_cast<const char*>(data), size);
    try {
        (void)gatehouse::config::load_config_text(yaml, "fuzz.yaml", "/nonexistent-base");
    } catch (const gatehouse::config::ConfigError&) {
    }
    return 0;
}
