#include "license/license_source.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gatehouse::license {

namespace {

std::int64_t nanoseconds(const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

std::shared_ptr<const LicenseVerdict> problem(LicenseVerdict::Status status, std::string text) {
    auto v = std::make_shared<LicenseVerdict>();
    v->status = status;
    v->problem = std::move(text);
    return v;
}

} // namespace

LicenseSource::LicenseSource(std::filesystem::path file, VendorKeys keys, std::shared_ptr<PathWatch> watch)
    : file_(std::move(file)), keys_(std::move(keys)), watch_(std::move(watch)) {}

std::optional<LicenseSource::FileIdentity> LicenseSource::stat_file() const {
    struct stat st {};
    if (::stat(file_.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return FileIdentity{};
        return std::nullopt;
    }
    return FileIdentity{true, st.st_dev, st.st_ino, st.st_size, nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

// Reads through one descriptor and takes the identity from fstat on it, so
// the verdict always belongs to the bytes that were read, even when the file
// is swapped between the caller's stat and this open.
LicenseSource::Loaded LicenseSource::load() const {
    const int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        const int error = errno;
        if (error == ENOENT || error == ENOTDIR)
            return {FileIdentity{}, problem(LicenseVerdict::Status::missing, "there is no license file")};
        return {
            FileIdentity{true},
            problem(LicenseVerdict::Status::invalid, std::string("the file cannot be opened: ") + std::strerror(error)),
            false};
    }
    struct stat st {};
    std::string text;
    std::string failure;
    bool lasting = true;
    if (::fstat(fd, &st) != 0) {
        lasting = false;
        failure = std::string("the file cannot be examined: ") + std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        failure = "it is not a regular file";
    } else if (static_cast<std::size_t>(st.st_size) > kMaxFileBytes) {
        failure = "it is " + std::to_string(st.st_size) + " bytes; a license file is at most " +
                  std::to_string(kMaxFileBytes);
    } else {
        text.resize(kMaxFileBytes + 1);
        std::size_t used = 0;
        for (;;) {
            const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                failure = std::string("the file cannot be read: ") + std::strerror(errno);
                lasting = false;
                break;
            }
            if (n == 0) break;
            used += static_cast<std::size_t>(n);
            if (used > kMaxFileBytes) {
                failure = "it grew past " + std::to_string(kMaxFileBytes) + " bytes while being read";
                break;
            }
        }
        text.resize(used);
    }
    ::close(fd);
    const FileIdentity identity{
        true, st.st_dev, st.st_ino, st.st_size, nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
    if (!failure.empty()) return {identity, problem(LicenseVerdict::Status::invalid, failure), lasting};
    return {identity, std::make_shared<const LicenseVerdict>(verify_license(text, keys_))};
}

std::shared_ptr<const LicenseVerdict> LicenseSource::current(PathWatch::Reading* reading) {
    // A path the watch refused is stat'ed on every call: the watch's queue
    // says nothing about it, and is not asked.
    bool try_follow = false;
    if (watch_) {
        std::lock_guard lock(mutex_);
        try_follow = !unfollowable_;
    }
    // Read before the file is looked at, so a change made after the look
    // moves the generation past the one this verdict is kept for.
    std::optional<std::uint64_t> generation;
    if (try_follow) {
        generation = reading ? reading->generation() : watch_->generation();
        std::lock_guard lock(mutex_);
        if (verdict_ && followed_at_ == generation) return verdict_;
    }
    const bool followed = try_follow && watch_->follow(file_, PathWatch::Scope::file);
    std::optional<FileIdentity> now;
    if (!followed) {
        now = stat_file();
        std::lock_guard lock(mutex_);
        ++lookups_;
        // A path follow() refused is not asked again on every call (it walks
        // every folder on the way), only once what stat says has changed.
        if (try_follow) unfollowable_ = true;
        if (now && identity_ && *identity_ == *now && verdict_) return verdict_;
    }
    // Changed (or first use, or stat failed, or an event concerned the file,
    // which a rewrite within one tick of the file clock can leave with the
    // same stat): verify again without holding the lock. Two threads may both
    // do it after one change; both reach the same verdict, and the file is
    // small.
    auto [identity, verdict, lasting] = load();
    std::lock_guard lock(mutex_);
    ++reads_;
    if (followed) ++lookups_;
    followed_at_ = followed && lasting ? generation : std::nullopt;
    if (watch_ && !try_follow) unfollowable_ = false; // the stat changed: follow() may say yes now
    // An identity from a failed stat is never cached: the next call looks again.
    const bool known = followed || now;
    // Logged once per change, not once per call while stat keeps failing.
    const bool news = !verdict_ || verdict_->status != verdict->status || verdict_->problem != verdict->problem ||
                      (known && identity_ != identity);
    identity_ = known ? std::optional(identity) : std::nullopt;
    if (news) {
        if (verdict->valid()) {
            std::string families;
            for (const auto& f : verdict->document->families)
                families += (families.empty() ? "" : ", ") + f;
            const bool expired = verdict->document->expired_at(std::chrono::system_clock::now());
            spdlog::log(expired ? spdlog::level::warn : spdlog::level::info,
                        "license {}: signed by key '{}' ({}) for '{}', families [{}], {} {}", file_.string(),
                        verdict->document->key_id, verdict->key_fingerprint, verdict->document->licensee, families,
                        expired ? "EXPIRED at" : "expires", verdict->document->expires_text);
        } else if (verdict->status == LicenseVerdict::Status::missing)
            spdlog::warn("license {}: no such file", file_.string());
        else
            spdlog::error("license {}: not valid, {}; it allows nothing (LICENSE_INVALID where no other license "
                          "covers a family)",
                          file_.string(), verdict->problem);
    }
    verdict_ = verdict;
    return verdict;
}

std::uint64_t LicenseSource::reads() const {
    std::lock_guard lock(mutex_);
    return reads_;
}

std::uint64_t LicenseSource::lookups() const {
    std::lock_guard lock(mutex_);
    return lookups_;
}

} // namespace gatehouse::license
