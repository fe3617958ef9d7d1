#include "cli/stdout_diversion.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace gatehouse::cli {

namespace {

// C stdio and iostreams buffer in the process, not in the descriptor: what a
// plugin printed must be flushed while fd 1 still points at stderr.
void flush_all() {
    std::cout.flush();
    std::fflush(stdout);
}

} // namespace

StdoutDiversion::StdoutDiversion() {
    flush_all();
    // Close-on-exec: while plugins load, the host starts programs (a
    // family's own process, an upstream's command), and none may hold the
    // protocol's stream.
    saved_stdout_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    if (saved_stdout_ >= 0 && ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        ::close(saved_stdout_);
        saved_stdout_ = -1;
    }
}

StdoutDiversion::~StdoutDiversion() {
    if (saved_stdout_ < 0) return;
    flush_all();
    ::dup2(saved_stdout_, STDOUT_FILENO);
    ::close(saved_stdout_);
}

} // namespace gatehouse::cli
