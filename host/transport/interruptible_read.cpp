#include "transport/interruptible_read.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <system_error>

namespace gatehouse::transport {

namespace {

constexpr int kInterruptSignal = SIGURG;

// Does nothing: being run is what ends the read (EINTR).
void interrupted(int) {}

} // namespace

InterruptibleRead::InterruptibleRead() {
    struct sigaction action {};
    action.sa_handler = &interrupted;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // not SA_RESTART: the read must return
    if (::sigaction(kInterruptSignal, &action, nullptr) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot install the handler that interrupts reads");
}

ssize_t InterruptibleRead::read(int fd, void* buffer, std::size_t size) {
    {
        std::lock_guard lock(mutex_);
        if (interrupted_) {
            errno = ECANCELED;
            return -1;
        }
        inside_ = true;
        reader_ = ::pthread_self();
    }
    const ssize_t n = ::read(fd, buffer, size);
    const int read_errno = errno;
    {
        std::lock_guard lock(mutex_);
        inside_ = false;
    }
    // No waiter, no system call: glibc's notify looks at its waiters first.
    left_.notify_all();
    errno = read_errno;
    return n;
}

void InterruptibleRead::interrupt() {
    std::unique_lock lock(mutex_);
    interrupted_ = true;
    // Under the lock the reader cannot leave its read unnoticed, so the
    // signal reaches it there or just before the read begins; in that case
    // the next one, a millisecond later, finds it waiting.
    while (inside_) {
        ::pthread_kill(reader_, kInterruptSignal);
        left_.wait_for(lock, std::chrono::milliseconds(1));
    }
}

} // namespace gatehouse::transport
