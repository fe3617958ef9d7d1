#pragma once

#include <cstddef>
#include <functional>

#include <pthread.h>

namespace gatehouse::limits {

// A thread with the stack it is given (std::thread takes the system's
// default): the threads that validate a tool's result against its schema
// need the stack worker_stack_bytes sizes, wherever they run.
class SizedThread {
public:
    SizedThread() = default;
    // stack_bytes 0: the system default. Throws std::system_error when the
    // thread cannot start.
    SizedThread(std::size_t stack_bytes, std::function<void()> body);
    SizedThread(SizedThread&& other) noexcept;
    SizedThread& operator=(SizedThread&& other) noexcept;
    SizedThread(const SizedThread&) = delete;
    SizedThread& operator=(const SizedThread&) = delete;
    ~SizedThread(); // joinable: std::terminate, as std::thread

    bool joinable() const { return started_; }
    void join();
    void detach();

private:
    pthread_t thread_{};
    bool started_ = false;
};

} // namespace gatehouse::limits
