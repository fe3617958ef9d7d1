#pragma once

#include <spdlog/common.h>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

namespace gatehouse::metrics {

// How much another program (an upstream server, a family's own process)
// may write into the host's log: lines cut to kLineBytes, at most kBurst of
// them at once and kPerSecond after that. The lines past it are counted,
// not written: the flood is told as it begins, and the count at most once a
// second as lines are let through again (and when the allowance ends), so a
// program that writes without end fills neither the disk nor the log
// shipper, and what it said before stays.
class LogAllowance {
public:
    static constexpr double kPerSecond = 50;
    static constexpr double kBurst = 500;
    static constexpr std::size_t kLineBytes = 8 * 1024;

    explicit LogAllowance(std::string label);
    ~LogAllowance();
    LogAllowance(const LogAllowance&) = delete;
    LogAllowance& operator=(const LogAllowance&) = delete;

    // The name its lines go under from now on (a family's process is known
    // by its library's file name until it names its family).
    void rename(std::string label);

    // Logs "[label] line" at `level`, when the allowance has room for it;
    // whether it had (what else the line goes to may follow the log's bound).
    bool write(spdlog::level::level_enum level, std::string_view line);

    // What was not written so far (for tests and the log's own summary).
    std::size_t dropped() const;

private:
    using Clock = std::chrono::steady_clock;
    mutable std::mutex mutex_;
    std::string label_; // under mutex_
    double tokens_ = kBurst;
    Clock::time_point refilled_ = Clock::now();
    Clock::time_point reported_{};  // when the flood or its count was last told
    std::size_t dropped_ = 0;       // since the count was last told
    std::size_t dropped_total_ = 0; // over its life
};

// Copies what `fd` carries into the log, a line at a time through
// `allowance`, until its end; a line that goes on past 64 KiB is written as
// far as it went (cut) and the rest up to its newline is skipped. Once
// `stop_fd` (when given; a process's pidfd) is readable, what `fd` holds
// already is copied (up to 1 MiB) and the copying ends, though the writing
// end may still be open: a program's output need not end with the program
// when something it started lives on holding it.
void copy_lines_to_log(int fd, LogAllowance& allowance, int stop_fd = -1);

} // namespace gatehouse::metrics
