#include "license/license_set.hpp"

#include "license/license_document.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <iterator>
#include <sys/stat.h>
#include <system_error>

namespace gatehouse::license {

namespace {

std::int64_t nanoseconds(const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// File times come from a clock that ticks every few milliseconds, so a file
// added within the tick of a listing can leave the directory's times as they
// were. A listing made that close to the directory's last change is not
// trusted yet: the next call lists again.
constexpr std::int64_t kSettleNs = 50'000'000;

bool is_license_name(const std::filesystem::path& name) {
    const auto text = name.string();
    return text.size() > 5 && text.front() != '.' && text.compare(text.size() - 5, 5, ".json") == 0;
}

} // namespace

LicenseSet::LicenseSet(std::vector<std::filesystem::path> files, std::filesystem::path directory, VendorKeys keys)
    : watch_(std::make_shared<PathWatch>()), listed_([&] {
          std::vector<std::shared_ptr<LicenseSource>> out;
          for (auto& f : files)
              out.push_back(std::make_shared<LicenseSource>(std::move(f), keys, watch_));
          return out;
      }()),
      directory_(std::move(directory)), keys_(std::move(keys)) {}

void LicenseSet::refresh_directory(PathWatch::Reading& reading) {
    const auto generation = reading.generation();
    {
        std::lock_guard lock(mutex_);
        if (listed_at_ == generation) return;
    }
    // Followed before it is listed, so a file added after the listing moves
    // the generation past the one the listing is kept for.
    bool try_follow;
    {
        std::lock_guard lock(mutex_);
        try_follow = !directory_unfollowable_;
    }
    const bool followed = try_follow && watch_->follow(directory_, PathWatch::Scope::entries);
    struct stat st {};
    std::optional<DirectoryIdentity> now;
    if (::stat(directory_.c_str(), &st) == 0)
        now = DirectoryIdentity{true, st.st_dev, st.st_ino, nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
    else if (errno == ENOENT || errno == ENOTDIR)
        now = DirectoryIdentity{};
    if (!followed) {
        std::lock_guard lock(mutex_);
        // Asked again only once the directory's stat has changed.
        if (try_follow) directory_unfollowable_ = true;
        if (now && directory_identity_ && *directory_identity_ == *now) return;
    }

    std::vector<std::filesystem::path> names;
    std::string problem;
    if (now && now->present) {
        std::error_code error;
        for (std::filesystem::directory_iterator it(directory_, error), end; !error && it != end; it.increment(error))
            if (is_license_name(it->path().filename())) names.push_back(it->path());
        if (error) problem = error.message();
        std::sort(names.begin(), names.end());
    } else if (!now) {
        problem = std::strerror(errno);
    }
    timespec wall{};
    ::clock_gettime(CLOCK_REALTIME, &wall);
    const bool settled =
        now && (!now->present || nanoseconds(wall) - std::max(now->mtime_ns, now->ctime_ns) > kSettleNs);

    std::lock_guard lock(mutex_);
    // A listing made at an older generation never replaces one made at a
    // newer: a call that saw the newer one kept may already rely on it.
    if (followed && listed_at_ && *listed_at_ > generation) return;
    ++listings_;
    std::vector<std::shared_ptr<LicenseSource>> next;
    for (const auto& path : names) {
        if (std::any_of(listed_.begin(), listed_.end(), [&](const auto& s) { return s->file() == path; })) continue;
        // A file still there keeps its source, and so its cached verdict.
        auto kept =
            std::find_if(in_directory_.begin(), in_directory_.end(), [&](const auto& s) { return s->file() == path; });
        next.push_back(kept != in_directory_.end() ? *kept : std::make_shared<LicenseSource>(path, keys_, watch_));
    }
    std::vector<std::string> before, after;
    for (const auto& s : in_directory_) {
        before.push_back(s->file().filename().string());
        if (std::find(next.begin(), next.end(), s) == next.end()) reads_of_dropped_ += s->reads();
    }
    for (const auto& s : next)
        after.push_back(s->file().filename().string());
    for (auto it = last_cover_.begin(); it != last_cover_.end();) {
        const bool gone = std::find(listed_.begin(), listed_.end(), it->second) == listed_.end() &&
                          std::find(next.begin(), next.end(), it->second) == next.end();
        it = gone ? last_cover_.erase(it) : std::next(it);
    }
    const bool news = listings_ == 1 || before != after || !problem.empty();
    in_directory_ = std::move(next);
    directory_identity_ = settled ? now : std::nullopt;
    // A followed directory's listing holds until an event, however recent
    // its times: the event, not the times, tells of the next change. One
    // that could not be made (stat or listing failed) is made again.
    listed_at_ = followed && now && problem.empty() ? std::optional(generation) : std::nullopt;
    if (!try_follow) directory_unfollowable_ = false;
    if (!news) return;
    if (!problem.empty())
        spdlog::error("license directory {}: cannot be listed, {}", directory_.string(), problem);
    else if (now && !now->present)
        spdlog::warn("license directory {}: no such directory", directory_.string());
    else
        spdlog::info("license directory {}: {} license file(s) [{}]", directory_.string(), after.size(), joined(after));
}

std::vector<std::shared_ptr<LicenseSource>> LicenseSet::sources() {
    PathWatch::Reading reading(*watch_);
    if (!directory_.empty()) refresh_directory(reading);
    std::lock_guard lock(mutex_);
    auto all = listed_;
    all.insert(all.end(), in_directory_.begin(), in_directory_.end());
    return all;
}

LicenseSet::Answer LicenseSet::find(std::string_view family, std::chrono::system_clock::time_point now) {
    using Outcome = Answer::Outcome;
    PathWatch::Reading reading(*watch_);
    if (!directory_.empty()) refresh_directory(reading);
    std::shared_ptr<LicenseSource> last;
    {
        std::lock_guard lock(mutex_);
        if (auto it = last_cover_.find(family); it != last_cover_.end()) last = it->second;
    }
    if (last) {
        auto verdict = last->current(&reading);
        if (verdict->valid() && verdict->document->covers(family) && !verdict->document->expired_at(now))
            return Answer{Outcome::covered, std::move(last), std::move(verdict), {}};
    }

    std::vector<std::shared_ptr<LicenseSource>> all;
    {
        std::lock_guard lock(mutex_);
        all = listed_;
        all.insert(all.end(), in_directory_.begin(), in_directory_.end());
    }
    std::optional<Answer> expired, invalid;
    bool any_file = false;
    std::vector<std::string> licensed;
    for (const auto& source : all) {
        auto verdict = source->current(&reading);
        if (verdict->status == LicenseVerdict::Status::missing) continue;
        any_file = true;
        if (!verdict->valid()) {
            // An unverified list of families still says which vendor's file
            // this was meant to be; a file without one might be anyone's.
            if (!invalid && (!verdict->document || verdict->document->covers(family)))
                invalid = Answer{Outcome::invalid, source, verdict, {}};
            continue;
        }
        const auto& document = *verdict->document;
        for (const auto& f : document.families)
            if (std::find(licensed.begin(), licensed.end(), f) == licensed.end()) licensed.push_back(f);
        if (!document.covers(family)) continue;
        if (!document.expired_at(now)) {
            std::lock_guard lock(mutex_);
            last_cover_.insert_or_assign(std::string(family), source);
            return Answer{Outcome::covered, source, std::move(verdict), {}};
        }
        // The one that expired last tells the person the most recent date.
        if (!expired || expired->verdict->document->expires < document.expires)
            expired = Answer{Outcome::expired, source, verdict, {}};
    }
    if (expired) return *expired;
    if (invalid) return *invalid;
    if (any_file) return Answer{Outcome::not_covered, {}, nullptr, std::move(licensed)};
    return Answer{Outcome::missing, {}, nullptr, {}};
}

std::uint64_t LicenseSet::reads() {
    std::uint64_t total = 0;
    for (const auto& s : listed_)
        total += s->reads();
    std::lock_guard lock(mutex_);
    for (const auto& s : in_directory_)
        total += s->reads();
    return total + reads_of_dropped_;
}

std::uint64_t LicenseSet::listings() const {
    std::lock_guard lock(mutex_);
    return listings_;
}

} // namespace gatehouse::license
