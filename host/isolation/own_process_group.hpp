#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <map>
#include <string>

namespace gatehouse::isolation {

// posix_spawn attributes for a program the host starts and supervises (a
// family's process, an upstream's command): a process group of its own,
// so that signalling the group ends whatever the program started too; and
// none of the host's blocked stop signals (StopSignal blocks them on every
// thread), which the program would otherwise inherit and could not be
// stopped by.
class OwnProcessGroup {
public:
    OwnProcessGroup();
    ~OwnProcessGroup();
    OwnProcessGroup(const OwnProcessGroup&) = delete;
    OwnProcessGroup& operator=(const OwnProcessGroup&) = delete;
    const posix_spawnattr_t* get() const { return &attributes_; }

private:
    posix_spawnattr_t attributes_;
};

// What a program the host starts may inherit of the host's environment
// without being trusted with it: enough to find and run a program, nothing
// that could hold the host's own secrets; each that is set, by name.
std::map<std::string, std::string> basic_environment();

// A descriptor that becomes readable once `pid` (a child the host started
// and has not reaped) has ended, whatever it left holding its pipes or
// socket: its pidfd, close-on-exec as every pidfd is. -1 with errno set
// where the kernel offers none.
int watch_exit(pid_t pid);

} // namespace gatehouse::isolation
