#pragma once

#include <optional>
#include <string>

namespace gatehouse::cli {

// `gatehouse docs --config FILE --out DIR`: one Markdown reference page per
// domain, written from the loaded registry (each tool's full definition with
// its schemas), so published docs never drift from the code. Returns the
// exit status.
int reference_docs_command(const std::optional<std::string>& config_file, const std::optional<std::string>& out_dir);

} // namespace gatehouse::cli
