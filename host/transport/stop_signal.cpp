#include "transport/stop_signal.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <pthread.h>

namespace gatehouse::transport {

namespace {

sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

} // namespace

StopSignal::StopSignal() {
    // A peer that goes away mid-write must give EPIPE, not kill the host.
    std::signal(SIGPIPE, SIG_IGN);
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    waiter_ = std::thread([this] { wait_loop(); });
}

StopSignal::~StopSignal() {
    exiting_ = true;
    waiter_.join();
}

void StopSignal::wait_loop() {
    const sigset_t set = stop_signals();
    // A short timeout instead of a wake-up signal, so destruction needs no
    // signal that could be mistaken for a stop.
    const timespec tick{0, 100 * 1000 * 1000};
    while (!exiting_) {
        const int signal = sigtimedwait(&set, nullptr, &tick);
        if (signal != SIGTERM && signal != SIGINT) continue;
        const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
        if (requested_) {
            // The operator asked twice: stop now, without waiting for the drain.
            spdlog::warn("{} received again: exiting without waiting for running requests", name);
            std::_Exit(1);
        }
        spdlog::info("{} received: stopping", name);
        request();
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
