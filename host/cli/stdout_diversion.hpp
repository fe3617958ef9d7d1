#pragma once

namespace gatehouse::cli {

// While alive, file descriptor 1 points at stderr. Plugins run code while they
// load (static constructors, gh_plugin_entry, init), and whatever they print
// must not reach stdout, which carries the protocol (serve) or the listing
// (plugins --json). Not thread-safe: use it before any other thread writes.
class StdoutDiversion {
public:
    StdoutDiversion();
    ~StdoutDiversion();
    StdoutDiversion(const StdoutDiversion&) = delete;
    StdoutDiversion& operator=(const StdoutDiversion&) = delete;

private:
    int saved_stdout_ = -1;
};

} // namespace gatehouse::cli
