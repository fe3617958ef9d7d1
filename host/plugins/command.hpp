#pragma once

#include <gatehouse/plugin.h>

#include <string>

namespace gatehouse::plugins {

// A command-line verb a family declares (ABI 1.6): `gatehouse <name> ARGS...`,
// checked at load time and run by LoadedPlugin::run_command.
struct Command {
    std::string name;
    std::string usage;   // what follows the verb, e.g. "[use SLUG]"; may be empty
    std::string summary; // one sentence for gatehouse --help; may be empty
    gh_command_fn run = nullptr;
    void* data = nullptr;
};

} // namespace gatehouse::plugins
