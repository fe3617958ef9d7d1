#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace gatehouse::transport {

// The reading of one stream that several threads wait on, held by one at a
// time: the stream's own reader thread while no caller waits, so what
// arrives unasked is heard, or the caller of a request that waits alone,
// which then reads its own answer with no thread hand-off (read_here). The
// own thread gives the reading up when kicked through an eventfd, and takes
// it back only once no caller has read for kIdle, or at once on read_on():
// requests one after another wake it once per kIdle, not once per request.
// A stdio upstream's output and a family process's socket are read this way.
class SharedReading {
public:
    // How long the reading stays with no one after a caller let it go,
    // before the own thread takes it back: a caller that asks again within
    // it reads its next answer itself too; what arrives unasked meanwhile
    // waits at most this long.
    static constexpr std::chrono::milliseconds kIdle{5};
    // The reads of what the stream still holds once its writer is gone.
    static constexpr int kMostDrainReads = 64;

    // `read_available`: one read of what `fd` holds (it blocks only when
    // nothing is there), each whole message handed on; false at the
    // stream's end, or a fault that ends it. Only the thread holding the
    // reading calls it, so what it keeps between calls needs no lock.
    // `end_fd` (optional): readable once the writer is gone (a process's
    // pidfd): the stream then ends with what `fd` holds, though something
    // else (a daemon the writer started) may keep its writing end open.
    // Each read takes what is there up to the reader's buffer, and a pipe
    // holds at most its capacity, so the writer's last words are read in a
    // few reads; what a daemon writes after them is left.
    SharedReading(int fd, std::function<bool()> read_available, int end_fd = -1);
    ~SharedReading(); // closes the eventfd
    SharedReading(const SharedReading&) = delete;
    SharedReading& operator=(const SharedReading&) = delete;

    // Whether callers can take the reading over from the own thread (the
    // eventfd was made); without it they wait for what it delivers.
    bool can_kick() const { return kick_fd_ >= 0; }

    // The own thread's part: reads while no caller does, until the stream
    // ends (whoever read its end). Returns once no one reads any more.
    void serve_own_thread();

    // Reads on the calling thread while no other does, until `enough()` or
    // `until`. False at once when another thread reads or the stream has
    // ended. `alone`: no other request waits, so taking the reading from
    // the own thread is worth waking it. A stream end read here is left to
    // the own thread to see to.
    bool read_here(std::chrono::steady_clock::time_point until, const std::function<bool()>& enough, bool alone);

    // Requests still wait after read_here's caller has its answer: the own
    // thread reads on at once.
    void read_on();

private:
    // Waits until the own thread may read; false once the stream has ended.
    bool take_back();
    // Once end_fd is readable: hands on what fd holds now, in at most
    // kMostDrainReads reads (a writer that lives on cannot keep it going); false.
    bool drain();
    // The own thread's reading: until a caller waiting alone wants it
    // (true), or the stream's end (false).
    bool read_until_wanted();

    enum class Holder { none, own_thread, caller };
    const int fd_;
    const std::function<bool()> read_available_;
    const int end_fd_;
    int kick_fd_ = -1; // wakes the own thread's poll to give the reading up
    std::mutex mutex_;
    std::condition_variable changed_;
    Holder holder_ = Holder::none;
    bool yield_wanted_ = false; // a caller waits alone: the own thread gives the reading up
    bool read_on_ = false;      // the own thread takes the reading at once
    bool ended_ = false;        // nothing more is read
    std::chrono::steady_clock::time_point released_at_{};
};

} // namespace gatehouse::transport
