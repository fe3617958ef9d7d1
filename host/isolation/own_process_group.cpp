#include "isolation/own_process_group.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include <initializer_list>

namespace gatehouse::isolation {

OwnProcessGroup::OwnProcessGroup() {
    posix_spawnattr_init(&attributes_);
    posix_spawnattr_setflags(&attributes_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attributes_, 0);
    sigset_t none, defaults;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes_, &none);
    sigemptyset(&defaults);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE})
        sigaddset(&defaults, sig);
    posix_spawnattr_setsigdefault(&attributes_, &defaults);
}

OwnProcessGroup::~OwnProcessGroup() {
    posix_spawnattr_destroy(&attributes_);
}

std::map<std::string, std::string> basic_environment() {
    std::map<std::string, std::string> env;
    for (const char* name : {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"})
        if (const char* value = std::getenv(name)) env[name] = value;
    return env;
}

int watch_exit(pid_t pid) {
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

} // namespace gatehouse::isolation
