#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace gatehouse::transport {

// SIGHUP turned into a callback: the operator's "re-read the configuration".
// Like StopSignal, construct it before any other thread starts, so every
// thread inherits the blocked signal and only this one's waiter receives it.
class ReloadSignal {
public:
    explicit ReloadSignal(std::function<void()> on_reload);
    ~ReloadSignal();
    ReloadSignal(const ReloadSignal&) = delete;
    ReloadSignal& operator=(const ReloadSignal&) = delete;

private:
    void wait_loop();

    std::function<void()> on_reload_;
    std::atomic<bool> exiting_{false};
    std::thread waiter_;
};

} // namespace gatehouse::transport
