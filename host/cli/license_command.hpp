#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gatehouse::cli {

// `gatehouse license verify FILE [--config YAML] [--json]`: what the file
// allows, checked against the vendor keys of the configuration (the embedded
// default without --config). Exit 0 when it is valid now, 1 when it is not.
//
// `gatehouse license sign --key PRIVATE.pem --key-id ID --licensee NAME
//  --families a,b --expires T [--issued T]`: the vendor's side; prints the
// signed license file on stdout.
//
// `arguments` are the words after `license`; `options` the --flags with
// their values. Returns the exit code (2 for a wrong command line).
int license_command(const std::vector<std::string>& arguments, const std::optional<std::string>& config_file,
                    const std::map<std::string, std::string>& options, bool json);

} // namespace gatehouse::cli
