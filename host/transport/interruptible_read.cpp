#include "transport/interruptible_read.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <system_error>

namespace gatehouse::transport {

namespace {

// A real-time signal past the two glibc keeps for itself: the kernel never
// sends one by itself (SIGURG, say, goes to a socket's owner on urgent
// data, and a plugin's runtime may use it). Not a constant: glibc decides
// SIGRTMIN at run time.
int interrupt_signal() {
    return SIGRTMIN + 4;
}

// Does nothing: being run is what ends the read (EINTR).
void interrupted(int) {}

// The handler, installed again when something replaced it (a plugin's
// runtime, say): with SA_RESTART, or no handler, the read would go on.
bool ensure_handler() {
    struct sigaction current {};
    if (::sigaction(interrupt_signal(), nullptr, &current) == 0 && current.sa_handler == &interrupted &&
        (current.sa_flags & (SA_RESTART | SA_SIGINFO)) == 0)
        return true;
    struct sigaction action {};
    action.sa_handler = &interrupted;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // not SA_RESTART: the read must return
    return ::sigaction(interrupt_signal(), &action, nullptr) == 0;
}

} // namespace

InterruptibleRead::InterruptibleRead() {
    if (!ensure_handler())
        throw std::system_error(errno, std::generic_category(), "cannot install the handler that interrupts reads");
}

void InterruptibleRead::read_on_this_thread() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, interrupt_signal());
    ::pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
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
    ssize_t n = ::read(fd, buffer, size);
    // A descriptor its opener made non-blocking (it shares the open file
    // with the host): wait for it in poll, which the signal ends too.
    while (n < 0 && errno == EAGAIN) {
        pollfd ready{fd, POLLIN, 0};
        if (::poll(&ready, 1, -1) < 0) break;
        n = ::read(fd, buffer, size);
    }
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

bool InterruptibleRead::interrupt() {
    std::unique_lock lock(mutex_);
    interrupted_ = true;
    if (!inside_) return true;
    ensure_handler();
    // Under the lock the reader cannot leave its read unnoticed, so the
    // signal reaches it there or just before the read begins; in that case
    // the next one, a millisecond later, finds it waiting.
    const auto give_up = std::chrono::steady_clock::now() + kMostInterruptWait;
    while (inside_ && std::chrono::steady_clock::now() < give_up) {
        ::pthread_kill(reader_, interrupt_signal());
        left_.wait_for(lock, std::chrono::milliseconds(1));
    }
    return !inside_;
}

} // namespace gatehouse::transport
