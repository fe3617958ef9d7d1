#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gatehouse::cli {

// `gatehouse VERB ARGS... [--config FILE]` for a verb a family declares
// (ABI 1.6), such as the sessions family's `bot`: the configuration's
// families load as serve would load them (init runs), the one that declares
// VERB runs it, and what it wrote goes to stdout and stderr. Returns its exit
// status, or nullopt when no loaded family declares VERB; then, when
// `verbs_when_unknown` is given, it holds the verbs the families do declare,
// as --help lists them (from the families already loaded). The host knows no
// family's files or settings: the verb does.
std::optional<int> run_family_command(const std::string& verb, const std::vector<std::string>& args,
                                      const std::optional<std::string>& config_file,
                                      std::string* verbs_when_unknown = nullptr);

// What `gatehouse --help` adds below the host's own verbs: those of the
// configuration's families, or how to see them when it does not load.
std::string family_commands_help(const std::optional<std::string>& config_file);

} // namespace gatehouse::cli
