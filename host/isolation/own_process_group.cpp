#include "isolation/own_process_group.hpp"

#include <signal.h>

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

} // namespace gatehouse::isolation
