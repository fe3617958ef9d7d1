#pragma once

#include "license/license_verdict.hpp"
#include "license/path_watch.hpp"
#include "license/vendor_key.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

namespace gatehouse::license {

// The license file, looked up anew on every request and never remembered by
// a session. With a PathWatch that can follow the file, a lookup costs the
// watch's one read(2) of its queued events, and the file is read and its
// signature verified again only after an event concerning it. Without one
// (no watch given, or the path cannot be followed), a lookup is one stat(2),
// and the file is read again only when what stat says changes (device,
// inode, size, modification or status-change time). Either way replacing,
// editing, removing or restoring the file takes effect on the next call.
// Thread-safe.
class LicenseSource {
public:
    LicenseSource(std::filesystem::path file, VendorKeys keys, std::shared_ptr<PathWatch> watch = nullptr);

    // The verdict on the file as it is now. Never null, never throws.
    // `reading`, when given, is the lookup's reading of this source's watch
    // (several files in one lookup share it).
    std::shared_ptr<const LicenseVerdict> current(PathWatch::Reading* reading = nullptr);

    const std::filesystem::path& file() const { return file_; }

    // How often the file was read and verified (tests, and the bench's proof
    // that the hot path does not re-read).
    std::uint64_t reads() const;
    // How often a lookup went to the file system (a stat, or a read), and
    // did not take the verdict on the watch's word (tests, and the bench).
    std::uint64_t lookups() const;

    // The largest license file read; anything larger is refused unread.
    static constexpr std::size_t kMaxFileBytes = 64 * 1024;

private:
    // What stat says about the file; `present` false when it does not exist.
    struct FileIdentity {
        bool present = false;
        dev_t device = 0;
        ino_t inode = 0;
        off_t size = 0;
        std::int64_t mtime_ns = 0;
        std::int64_t ctime_ns = 0;
        bool operator==(const FileIdentity&) const = default;
    };
    // Identity of the path now, or nullopt with errno set when stat fails for
    // another reason than absence.
    std::optional<FileIdentity> stat_file() const;
    struct Loaded {
        FileIdentity identity;
        std::shared_ptr<const LicenseVerdict> verdict;
        // False for a failure that may pass by itself (no descriptor left, an
        // I/O error): such a verdict is never kept on the watch's word.
        bool lasting = true;
    };
    Loaded load() const;

    const std::filesystem::path file_;
    const VendorKeys keys_;
    const std::shared_ptr<PathWatch> watch_; // may be null
    mutable std::mutex mutex_;
    std::optional<FileIdentity> identity_;     // of the file the cached verdict was made from
    std::optional<std::uint64_t> followed_at_; // the watch's generation the verdict holds for, while followed
    bool unfollowable_ = false;                // follow() said no: tried again only once the stat changes
    std::shared_ptr<const LicenseVerdict> verdict_;
    std::uint64_t reads_ = 0;
    std::uint64_t lookups_ = 0;
};

} // namespace gatehouse::license
