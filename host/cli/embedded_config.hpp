#pragma once

#include <string_view>

namespace gatehouse::cli {

// config/gatehouse.yaml as it was at build time: the host works with no file.
extern const std::string_view kEmbeddedConfig;

} // namespace gatehouse::cli
