#pragma once

#include "metrics/batch_queue.hpp"

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gatehouse::metrics {

// The audit log: one JSON line per gate decision and tool call, appended to
// a file by a thread of its own, so a slow or full disk never holds up a
// call. Lines wait in a bounded queue; when it is full a line is dropped and
// counted, never waited for. A write that fails is counted and logged (once
// until writing works again), and the line is lost, not retried forever.
// reopen() makes the next write open the path anew (SIGHUP, after logrotate
// moved the file).
class AuditLog {
public:
    struct Counters {
        std::function<void()> dropped;      // the queue was full
        std::function<void()> write_failed; // open or write failed
    };

    AuditLog(std::filesystem::path path, std::size_t max_queue, Counters counters);
    ~AuditLog(); // writes what is queued, then stops
    AuditLog(const AuditLog&) = delete;
    AuditLog& operator=(const AuditLog&) = delete;

    // Queues one line (without its newline). Never blocks on the disk.
    void write(std::string line);
    void reopen();
    // Waits until every line queued so far was written (or failed); for tests and shutdown.
    void flush() { lines_.flush(); }

private:
    void write_out(std::vector<std::string>& lines);
    bool append(const std::string& bytes);

    const std::filesystem::path path_;
    Counters counters_;
    std::atomic<bool> reopen_{false};
    // The writer thread's own, closed after that thread stopped (lines_ goes
    // first): a line queued during shutdown never meets a closed number.
    struct Descriptor {
        int fd = -1;
        ~Descriptor();
    } fd_;
    bool failing_ = false; // the writer thread's own: the last write failed
    // The writer thread's own: a write failed partway, so the file ends inside
    // a line; the next write starts a new line first, so no whole line is
    // glued onto the fragment.
    bool partial_line_ = false;
    BatchQueue<std::string> lines_; // last: its thread stops before the rest goes
};

} // namespace gatehouse::metrics
