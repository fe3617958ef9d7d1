#include "metrics/log_allowance.hpp"

#include "protocol/utf8_text.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace gatehouse::metrics {

LogAllowance::LogAllowance(std::string label) : label_(std::move(label)) {}

LogAllowance::~LogAllowance() {
    std::lock_guard lock(mutex_);
    if (dropped_ > 0) spdlog::warn("[{}] {} more lines of its were not logged", label_, dropped_);
}

void LogAllowance::rename(std::string label) {
    std::lock_guard lock(mutex_);
    label_ = std::move(label);
}

bool LogAllowance::write(spdlog::level::level_enum level, std::string_view line) {
    constexpr auto kReportEvery = std::chrono::seconds(1);
    bool let_through = false, flooding = false;
    std::size_t not_logged = 0;
    std::string label;
    {
        std::lock_guard lock(mutex_);
        label = label_;
        const auto now = Clock::now();
        tokens_ = std::min(kBurst, tokens_ + std::chrono::duration<double>(now - refilled_).count() * kPerSecond);
        refilled_ = now;
        if (tokens_ >= 1) {
            tokens_ -= 1;
            let_through = true;
            if (dropped_ > 0 && now - reported_ >= kReportEvery) {
                not_logged = std::exchange(dropped_, 0);
                reported_ = now;
            }
        } else {
            ++dropped_total_;
            // Said as a flood begins, and its count at most once a second
            // after: what tells of the flood is itself bounded.
            if (dropped_++ == 0 && now - reported_ >= kReportEvery) {
                flooding = true;
                reported_ = now;
            }
        }
    }
    if (flooding)
        spdlog::warn("[{}] writes more than {} lines a second into the host's log; the next are counted, not written",
                     label, static_cast<int>(kPerSecond));
    if (not_logged > 0) spdlog::warn("[{}] {} lines of its were not logged", label, not_logged);
    if (let_through) spdlog::log(level, "[{}] {}", label, protocol::cut_utf8(line, kLineBytes, " (cut)"));
    return let_through;
}

std::size_t LogAllowance::dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_total_;
}

void copy_lines_to_log(int fd, LogAllowance& allowance, int stop_fd) {
    constexpr std::size_t kLongestLine = 64 * 1024;
    // After the stop, what a writer that lives on keeps sending is not read for ever.
    constexpr std::size_t kLongestDrain = 1024 * 1024;
    std::string pending;
    bool skipping = false; // the rest of a line already written cut
    bool stopping = false;
    std::size_t drained = 0;
    char buffer[4096];
    for (;;) {
        if (stop_fd >= 0 && !stopping) {
            pollfd ready[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
            if (::poll(ready, 2, -1) < 0) {
                if (errno == EINTR) continue;
                break;
            }
            if (ready[1].revents != 0) {
                stopping = true; // from now on, only what is there
                ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
            }
        }
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // its end, or after the stop nothing more now
        if (stopping && (drained += static_cast<std::size_t>(n)) > kLongestDrain) break;
        pending.append(buffer, static_cast<std::size_t>(n));
        for (std::size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
            if (!skipping) allowance.write(spdlog::level::info, std::string_view(pending).substr(0, end));
            skipping = false;
        }
        if (pending.size() > kLongestLine) {
            if (!skipping) allowance.write(spdlog::level::info, pending);
            skipping = true;
            pending.clear();
        }
    }
    if (!pending.empty() && !skipping) allowance.write(spdlog::level::info, pending);
}

} // namespace gatehouse::metrics
