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
    : path_(std::move(path)), counters_(std::move(counters)),
      lines_(max_queue, kBatch, kPace, [this](std::vector<std::string>& lines) { write_out(lines); }) {}

AuditLog::~AuditLog() {
    lines_.flush();
}

AuditLog::Descriptor::~Descriptor() {
    if (fd >= 0) ::close(fd);
}

void AuditLog::write(std::string line) {
    line += '\n';
    if (!lines_.push(std::move(line)) && counters_.dropped) counters_.dropped();
}

void AuditLog::reopen() {
    reopen_ = true;
    lines_.poke();
}

// One write for the whole batch: lines are whole, and O_APPEND keeps them
// whole against another writer of the same file.
void AuditLog::write_out(std::vector<std::string>& lines) {
    if (reopen_.exchange(false) && fd_.fd >= 0) {
        ::close(fd_.fd);
        fd_.fd = -1;
    }
    if (lines.empty()) return;
    std::string batch;
    for (const auto& line : lines)
        batch += line;
    if (!append(batch) && counters_.write_failed)
        for (std::size_t i = 0; i < lines.size(); ++i)
            counters_.write_failed();
}

bool AuditLog::append(const std::string& batch) {
    std::size_t done = 0;
    const auto fail = [&](const char* what) {
        const int error = errno;
        if (!failing_)
            spdlog::error("audit log {}: {} failed: {}; audit lines are lost until it works again", path_.string(),
                          what, std::strerror(error));
        failing_ = true;
        if (done > 0) partial_line_ = true;
        if (fd_.fd >= 0) ::close(fd_.fd);
        fd_.fd = -1; // the next batch opens the path again
        return false;
    };
    if (fd_.fd < 0) {
        // Owner-only: audit lines name principals and stores.
        fd_.fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd_.fd < 0) return fail("open");
    }
    std::string after_fragment;
    if (partial_line_) after_fragment = "\n" + batch;
    const std::string& bytes = partial_line_ ? after_fragment : batch;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd_.fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail("write");
        done += static_cast<std::size_t>(n);
    }
    partial_line_ = false;
    if (failing_) spdlog::info("audit log {}: writing works again", path_.string());
    failing_ = false;
    return true;
}

} // namespace gatehouse::metrics
