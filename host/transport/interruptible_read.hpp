#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace gatehouse::transport {

// A blocking read(2) that another thread can end: stdin's reader waits in
// read() itself, one system call a wake-up, where waiting in poll() beside a
// stop pipe and then reading took two (a system call costs about 1 µs on a
// virtual machine, some 5 % of a sequential call's latency over stdio).
//
// A stop ends the wait with a signal sent to the thread inside the read
// (SIGRTMIN + 4, interruptible_read.cpp: a real-time signal, which the
// kernel never sends by itself), whose handler does nothing and is installed without
// SA_RESTART, so the read returns EINTR. This class sends it only to a
// thread between its check for the stop and its read's return, never to one
// running anything else, and sends it again every millisecond until the
// read has returned, since it may come just before the read begins. A
// descriptor its opener made non-blocking is waited on with poll(), which a
// signal ends whatever the handler's flags.
class InterruptibleRead {
public:
    // How long interrupt() keeps trying before it gives up (a read the
    // kernel does not interrupt: a FUSE file that hangs, say).
    static constexpr std::chrono::milliseconds kMostInterruptWait{250};

    // Installs the signal's handler (the same each time); std::system_error
    // when the system refuses it.
    InterruptibleRead();
    InterruptibleRead(const InterruptibleRead&) = delete;
    InterruptibleRead& operator=(const InterruptibleRead&) = delete;

    // By a thread taking the reading over, before its first read: unblocks
    // the signal for it (a thread inherits its creator's mask, and a pool's
    // worker may have been made by a thread that blocks every signal).
    void read_on_this_thread();

    // read(2) of `fd`: -1 with errno ECANCELED once interrupt() was called
    // (a read under way returns -1 with EINTR, and the next one ECANCELED).
    ssize_t read(int fd, void* buffer, std::size_t size);

    // From any thread: ends a read under way and every later one. True once
    // no thread is inside a read any more; false when one still is after
    // kMostInterruptWait.
    bool interrupt();

private:
    std::mutex mutex_;
    std::condition_variable left_; // a thread left its read
    bool interrupted_ = false;
    bool inside_ = false; // a thread, `reader_`, is between its check and its read's return
    pthread_t reader_{};
};

} // namespace gatehouse::transport
