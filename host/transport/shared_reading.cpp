#include "transport/shared_reading.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace gatehouse::transport {

using Clock = std::chrono::steady_clock;

SharedReading::SharedReading(int fd, std::function<bool()> read_available, int end_fd)
    : fd_(fd), read_available_(std::move(read_available)), end_fd_(end_fd),
      kick_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

SharedReading::~SharedReading() {
    if (kick_fd_ >= 0) ::close(kick_fd_);
}

void SharedReading::serve_own_thread() {
    while (take_back() && read_until_wanted()) {
    }
    std::lock_guard lock(mutex_);
    ended_ = true; // no caller reads from here on
    changed_.notify_all();
}

bool SharedReading::take_back() {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (ended_) return false;
        if (holder_ == Holder::none && (read_on_ || Clock::now() - released_at_ >= kIdle)) break;
        // Not woken by each release: callers reading their answers one
        // after another cost this thread a wake-up per kIdle only.
        changed_.wait_for(lock, kIdle);
    }
    read_on_ = false;
    holder_ = Holder::own_thread;
    return true;
}

bool SharedReading::drain() {
    for (int reads = 0; reads < kMostDrainReads;) {
        pollfd ready{fd_, POLLIN, 0};
        const int polled = ::poll(&ready, 1, 0);
        if (polled < 0 && errno == EINTR) continue;
        if (polled <= 0 || (ready.revents & POLLIN) == 0 || !read_available_()) return false;
        ++reads;
    }
    return false;
}

bool SharedReading::read_until_wanted() {
    for (;;) {
        // The kick's place is kept when there is none, so the end's index is fixed.
        pollfd fds[3] = {{fd_, POLLIN, 0}, {kick_fd_, POLLIN, 0}, {end_fd_, POLLIN, 0}};
        if (::poll(fds, 3, -1) < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (fds[0].revents != 0 && !read_available_()) return false;
        if (fds[2].revents != 0) return drain();
        if (fds[1].revents == 0) continue;
        std::uint64_t kicks;
        while (::read(kick_fd_, &kicks, sizeof kicks) > 0) {
        }
        std::lock_guard lock(mutex_);
        if (!yield_wanted_) continue; // a kick for a caller that stopped waiting
        yield_wanted_ = false;
        holder_ = Holder::none;
        released_at_ = Clock::now();
        changed_.notify_all();
        return true;
    }
}

bool SharedReading::read_here(Clock::time_point until, const std::function<bool()>& enough, bool alone) {
    {
        std::unique_lock lock(mutex_);
        if (holder_ == Holder::own_thread && alone && !ended_ && kick_fd_ >= 0) {
            yield_wanted_ = true;
            const std::uint64_t kick = 1;
            (void)!::write(kick_fd_, &kick, sizeof kick);
            changed_.wait_until(lock, until, [&] { return holder_ != Holder::own_thread || ended_; });
            yield_wanted_ = false;
        }
        if (holder_ != Holder::none || ended_) return false;
        holder_ = Holder::caller;
    }
    // Given back however the reading ends, an exception included: a reading
    // kept by nobody would leave every later caller waiting.
    bool more = true;
    struct GiveBack {
        SharedReading& self;
        const bool& more;
        ~GiveBack() {
            std::lock_guard lock(self.mutex_);
            self.holder_ = Holder::none;
            self.released_at_ = Clock::now();
            // The end is the own thread's to see to: it returns from serve_own_thread.
            if (more) return;
            self.ended_ = true;
            self.changed_.notify_all();
        }
    } give_back{*this, more};
    while (more && !enough()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
        if (left <= 0) break;
        pollfd ready[2] = {{fd_, POLLIN, 0}, {end_fd_, POLLIN, 0}};
        const int polled = ::poll(ready, 2, static_cast<int>(left));
        if (polled < 0 && errno == EINTR) continue;
        if (polled == 0) break;
        if (polled > 0 && ready[0].revents == 0 && ready[1].revents != 0) {
            more = drain(); // the writer is gone and nothing is left: the end
            break;
        }
        more = polled > 0 && read_available_();
    }
    return true;
}

void SharedReading::read_on() {
    std::lock_guard lock(mutex_);
    read_on_ = true;
    changed_.notify_all();
}

} // namespace gatehouse::transport
