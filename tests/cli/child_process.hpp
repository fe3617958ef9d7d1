#pragma once

#include <map>
#include <string>
#include <vector>

namespace gatehouse::test {

struct ChildResult {
    int exit_code = -1; // 128 + signal when killed by one
    std::string out;    // everything written to stdout
    std::string err;    // everything written to stderr
};

// Runs `program` with `args`, feeds `input` to its stdin and closes it, and
// collects both outputs until it exits. `env` entries are set on top of the
// current environment; an empty value removes the variable.
ChildResult run_child(const std::string& program, const std::vector<std::string>& args, const std::string& input = "",
                      const std::map<std::string, std::string>& env = {});

} // namespace gatehouse::test
