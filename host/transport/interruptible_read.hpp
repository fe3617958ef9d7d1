#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace gatehouse::transport {

// A blocking read(2) that another thread can end: stdin's reader waits in
// read() itself, one system call a wake-up, where waiting in poll() beside a
// stop pipe and then reading took two (a system call costs about 1 µs on a
// virtual machine, some 5 % of a sequential call's latency over stdio).
//
// A stop ends the wait with a signal sent to the thread inside the read:
// SIGURG, whose handler does nothing and is installed without SA_RESTART,
// so the read returns EINTR. SIGURG is ignored by default, and the kernel
// sends it only to the owner of a socket (F_SETOWN), which the host never
// sets. A thread is signalled only between its check for the stop and its
// read's return, never while it runs anything else (a plugin's call); the
// signal is sent again every millisecond until the read has returned, for
// it may come just before the read begins.
class InterruptibleRead {
public:
    // Installs SIGURG's handler (the same each time); std::system_error when
    // the system refuses it.
    InterruptibleRead();
    InterruptibleRead(const InterruptibleRead&) = delete;
    InterruptibleRead& operator=(const InterruptibleRead&) = delete;

    // read(2) of `fd`: -1 with errno ECANCELED once interrupt() was called
    // (a read under way returns -1 with EINTR, and the next one ECANCELED).
    ssize_t read(int fd, void* buffer, std::size_t size);

    // From any thread: ends a read under way and every later one. Returns
    // once no thread is inside a read any more.
    void interrupt();

private:
    std::mutex mutex_;
    std::condition_variable left_; // a thread left its read
    bool interrupted_ = false;
    bool inside_ = false; // a thread, `reader_`, is between its check and its read's return
    pthread_t reader_{};
};

} // namespace gatehouse::transport
