#pragma once

#include "license/license_source.hpp"
#include "license/license_verdict.hpp"
#include "license/vendor_key.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::license {

// Every license file the configuration names — listed files, and each *.json
// in a license directory — asked which one covers a family now. Each vendor
// ships its own file, so no single file covers every licensed family.
//
// The cost of an answer that allows the call: where the files and the
// directory can be followed by a PathWatch (local file systems, no symbolic
// links on the way), one read(2) of the watch's queued events for the file
// that covered the family last time, and one for the directory; a file is
// read and verified again, and the directory listed again, only after an
// event concerning it. Elsewhere one stat(2) of each instead, and a file is
// read again when its stat changes, the directory listed again when its own
// stat changes (see LicenseSource). Only an answer that refuses looks at
// every file. Thread-safe.
class LicenseSet {
public:
    // Files are asked in the order given, then the directory's in name order.
    LicenseSet(std::vector<std::filesystem::path> files, std::filesystem::path directory, VendorKeys keys);

    struct Answer {
        enum class Outcome {
            covered,     // a valid license covers the family and has not expired
            missing,     // no license file exists at all
            not_covered, // files exist, and none names the family
            expired,     // the only valid licenses naming the family have expired
            invalid,     // a file that may name the family is not a valid license, and no valid one names it
        };
        Outcome outcome = Outcome::missing;
        std::shared_ptr<const LicenseSource> source;   // the file that decided (covered, expired, invalid)
        std::shared_ptr<const LicenseVerdict> verdict; // that file's
        std::vector<std::string> licensed_families;    // not_covered: what the valid licenses cover

        // The deciding file's path; empty when no file decided.
        std::filesystem::path file() const { return source ? source->file() : std::filesystem::path(); }
    };

    // Which license covers `family` at `now`. Precedence when none does: a
    // valid but expired license naming the family (EXPIRED), then an invalid
    // file that names it or whose families cannot be read (INVALID), then any
    // file at all (NOT_COVERED), else MISSING. Never throws.
    Answer find(std::string_view family, std::chrono::system_clock::time_point now);

    // The files as they are now, listed first, then the directory's.
    std::vector<std::shared_ptr<LicenseSource>> sources();

    const std::filesystem::path& directory() const { return directory_; }

    // How often a file was read and verified, and the directory listed (tests,
    // and the bench's proof that the hot path does neither).
    std::uint64_t reads();
    std::uint64_t listings() const;

private:
    struct DirectoryIdentity {
        bool present = false;
        dev_t device = 0;
        ino_t inode = 0;
        std::int64_t mtime_ns = 0;
        std::int64_t ctime_ns = 0;
        bool operator==(const DirectoryIdentity&) const = default;
    };
    void refresh_directory(PathWatch::Reading& reading);

    const std::shared_ptr<PathWatch> watch_;
    const std::vector<std::shared_ptr<LicenseSource>> listed_;
    const std::filesystem::path directory_;
    const VendorKeys keys_;
    mutable std::mutex mutex_;
    std::optional<DirectoryIdentity> directory_identity_; // of the listing in_directory_ was made from
    std::optional<std::uint64_t> listed_at_; // the watch's generation that listing holds for, while followed
    bool directory_unfollowable_ = false;    // follow() said no: asked again once the stat changes
    std::vector<std::shared_ptr<LicenseSource>> in_directory_;
    std::map<std::string, std::shared_ptr<LicenseSource>, std::less<>> last_cover_; // family -> its file last time
    std::uint64_t listings_ = 0;
    std::uint64_t reads_of_dropped_ = 0; // by files since gone from the directory
};

} // namespace gatehouse::license
