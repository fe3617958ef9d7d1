#include "transport/reload_signal.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <ctime>
#include <exception>
#include <pthread.h>

namespace gatehouse::transport {

namespace {

sigset_t reload_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    return set;
}

} // namespace

ReloadSignal::ReloadSignal(std::function<void()> on_reload) : on_reload_(std::move(on_reload)) {
    // The waiter must never be the thread the kernel picks for SIGTERM or
    // SIGINT (StopSignal waits for those), whichever of the two is made
    // first: it starts with them blocked, and this thread gets its own mask
    // back apart from SIGHUP.
    sigset_t previous;
    sigset_t all = reload_signals();
    sigaddset(&all, SIGTERM);
    sigaddset(&all, SIGINT);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    waiter_ = std::thread([this] { wait_loop(); });
    sigaddset(&previous, SIGHUP);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

ReloadSignal::~ReloadSignal() {
    exiting_ = true;
    waiter_.join();
}

void ReloadSignal::wait_loop() {
    const sigset_t set = reload_signals();
    const timespec tick{0, 100 * 1000 * 1000};
    while (!exiting_) {
        if (sigtimedwait(&set, nullptr, &tick) != SIGHUP) continue;
        spdlog::info("SIGHUP received: re-reading the configuration");
        try {
            on_reload_();
        } catch (const std::exception& e) {
            // A broken edit must not take the running host down: it keeps
            // serving what it had, and the log says why the edit was ignored.
            spdlog::error("the configuration was not re-read: {}", e.what());
        }
    }
}

} // namespace gatehouse::transport
