#include "metrics/audit_log.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace gatehouse::metrics {

namespace {
constexpr std::size_t kBatch = 256;
constexpr auto kPace = std::chrono::milliseconds(50);
} // namespace

AuditLog::AuditLog(std::filesystem::path path, std::size_t max_queue, Counters counters)
    : path_(std::move(path)), max_queue_(max_queue), counters_(std::move(counters)), writer_([this] { run(); }) {}

AuditLog::~AuditLog() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    writer_.join();
    if (fd_ >= 0) ::close(fd_);
}

void AuditLog::write(std::string line) {
    line += '\n';
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (queue_.size() >= max_queue_) {
            if (counters_.dropped) counters_.dropped();
            return;
        }
        queue_.push_back(std::move(line));
        ++queued_;
        // The writer wakes on its own every kPace; a call wakes it (a
        // system call) only when a batch is worth writing at once.
        wake = queue_.size() == kBatch;
    }
    if (wake) wake_.notify_one();
}

void AuditLog::reopen() {
    {
        std::lock_guard lock(mutex_);
        reopen_ = true;
    }
    wake_.notify_one();
}

void AuditLog::flush() {
    std::unique_lock lock(mutex_);
    const std::uint64_t target = queued_;
    flushing_ = true;
    wake_.notify_one();
    written_.wait(lock, [&] { return settled_ >= target; });
}

void AuditLog::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait_for(lock, kPace, [&] { return stopping_ || reopen_ || flushing_ || queue_.size() >= kBatch; });
        flushing_ = false;
        if (reopen_) {
            reopen_ = false;
            if (fd_ >= 0) ::close(fd_);
            fd_ = -1;
        }
        if (queue_.empty()) {
            if (stopping_) return;
            continue;
        }
        // One write for everything queued: lines are whole, and O_APPEND
        // keeps them whole against another writer of the same file.
        std::string batch;
        std::uint64_t lines = 0;
        while (!queue_.empty()) {
            batch += queue_.front();
            queue_.pop_front();
            ++lines;
        }
        lock.unlock();
        const bool ok = write_out(batch);
        lock.lock();
        if (!ok && counters_.write_failed)
            for (std::uint64_t i = 0; i < lines; ++i)
                counters_.write_failed();
        settled_ += lines;
        written_.notify_all();
    }
}

bool AuditLog::write_out(const std::string& batch) {
    const auto fail = [&](const char* what) {
        const int error = errno;
        if (!failing_)
            spdlog::error("audit log {}: {} failed: {}; audit lines are lost until it works again", path_.string(),
                          what, std::strerror(error));
        failing_ = true;
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1; // the next batch opens the path again
        return false;
    };
    if (fd_ < 0) {
        // Owner-only: audit lines name principals and stores.
        fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd_ < 0) return fail("open");
    }
    std::size_t done = 0;
    while (done < batch.size()) {
        const ssize_t n = ::write(fd_, batch.data() + done, batch.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail("write");
        done += static_cast<std::size_t>(n);
    }
    if (failing_) spdlog::info("audit log {}: writing works again", path_.string());
    failing_ = false;
    return true;
}

} // namespace gatehouse::metrics
