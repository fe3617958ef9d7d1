#pragma once

#include <filesystem>

namespace gatehouse::config {

// The prefix the running executable is installed under: the parent of its
// directory (<prefix>/bin/gatehouse). The build tree has the same shape, so
// what ships beside the host (plugins, the OpenSSL module) is found the same
// way in both. The working directory when /proc/self/exe cannot be read.
std::filesystem::path install_root();

} // namespace gatehouse::config
