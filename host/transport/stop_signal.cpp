#include "transport/stop_signal.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <poll.h>
#include <pthread.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace gatehouse::transport {

StopSignal::StopSignal(std::function<void()> on_reload) : on_reload_(std::move(on_reload)) {
    // SIGPIPE is not among these: main ignores it for the whole process,
    // whatever the verb, so a peer gone mid-write is an EPIPE.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (on_reload_) sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (signal_fd_ < 0 || wake_fd_ < 0) {
        if (signal_fd_ >= 0) ::close(signal_fd_);
        if (wake_fd_ >= 0) ::close(wake_fd_);
        throw std::runtime_error("cannot wait for stop signals (signalfd/eventfd failed)");
    }
    waiter_ = std::thread([this] { wait_loop(); });
}

StopSignal::~StopSignal() {
    const std::uint64_t one = 1;
    while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    waiter_.join();
    {
        std::lock_guard lock(reload_mutex_);
        reloader_ending_ = true;
        reload_changed_.notify_one();
    }
    // A re-read under way ends first: it holds the host it re-reads.
    if (reloader_.joinable()) reloader_.join();
    ::close(signal_fd_);
    ::close(wake_fd_);
}

void StopSignal::wait_loop() {
    for (;;) {
        pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            spdlog::error("waiting for stop signals failed: errno {}", errno);
            return;
        }
        if (fds[1].revents) return;
        signalfd_siginfo info;
        if (::read(signal_fd_, &info, sizeof info) != sizeof info) continue;
        const int signal = static_cast<int>(info.ssi_signo);
        if (signal == SIGHUP)
            ask_reload();
        else
            stop_signal_received(signal);
    }
}

void StopSignal::stop_signal_received(int signal) {
    const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    if (signalled_.exchange(true)) {
        // The operator asked twice: stop now, without waiting for the drain.
        spdlog::warn("{} received again: exiting without waiting for running requests", name);
        std::_Exit(1);
    }
    if (requested_) {
        // Already stopping (stdin ended, as an MCP client closes it before
        // its signal): the shutdown under way goes on; a second signal ends it.
        spdlog::info("{} received while stopping: the shutdown goes on", name);
        return;
    }
    spdlog::info("{} received: stopping", name);
    request();
}

void StopSignal::ask_reload() {
    std::lock_guard lock(reload_mutex_);
    if (reloader_ending_) return;
    reload_wanted_ = true;
    if (!reloader_.joinable()) reloader_ = std::thread([this] { reload_loop(); });
    reload_changed_.notify_one();
}

void StopSignal::reload_loop() {
    std::unique_lock lock(reload_mutex_);
    for (;;) {
        reload_changed_.wait(lock, [this] { return reload_wanted_ || reloader_ending_; });
        if (reloader_ending_) return;
        reload_wanted_ = false;
        lock.unlock();
        // After a stop the host is being torn down: nothing is re-read.
        if (!requested_) reload();
        lock.lock();
    }
}

void StopSignal::reload() {
    spdlog::info("SIGHUP received: re-reading the configuration");
    try {
        on_reload_();
    } catch (const std::exception& e) {
        // A broken edit must not take the running host down: it keeps
        // serving what it had, and the log says why the edit was ignored.
        spdlog::error("the configuration was not re-read: {}", e.what());
    }
}

void StopSignal::on_stop(std::function<void()> callback) {
    std::unique_lock lock(mutex_);
    if (requested_) {
        lock.unlock();
        callback();
        return;
    }
    callbacks_.push_back(std::move(callback));
}

void StopSignal::request() {
    std::vector<std::function<void()>> callbacks;
    {
        std::lock_guard lock(mutex_);
        if (requested_.exchange(true)) return;
        callbacks.swap(callbacks_);
    }
    for (auto& callback : callbacks)
        callback();
}

} // namespace gatehouse::transport
