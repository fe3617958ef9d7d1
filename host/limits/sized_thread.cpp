#include "limits/sized_thread.hpp"

#include <exception>
#include <memory>
#include <system_error>
#include <utility>

namespace gatehouse::limits {

namespace {

void* run_body(void* raw) {
    const std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(raw));
    (*body)();
    return nullptr;
}

} // namespace

SizedThread::SizedThread(std::size_t stack_bytes, std::function<void()> body) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    int error = stack_bytes > 0 ? pthread_attr_setstacksize(&attributes, stack_bytes) : 0;
    auto owned = std::make_unique<std::function<void()>>(std::move(body));
    if (error == 0) error = pthread_create(&thread_, &attributes, &run_body, owned.get());
    pthread_attr_destroy(&attributes);
    if (error != 0) throw std::system_error(error, std::generic_category(), "cannot start a thread");
    owned.release(); // run_body owns it now
    started_ = true;
}

SizedThread::SizedThread(SizedThread&& other) noexcept
    : thread_(other.thread_), started_(std::exchange(other.started_, false)) {}

SizedThread& SizedThread::operator=(SizedThread&& other) noexcept {
    if (started_) std::terminate();
    thread_ = other.thread_;
    started_ = std::exchange(other.started_, false);
    return *this;
}

SizedThread::~SizedThread() {
    if (started_) std::terminate();
}

void SizedThread::join() {
    if (!started_) return;
    pthread_join(thread_, nullptr);
    started_ = false;
}

void SizedThread::detach() {
    if (!started_) return;
    pthread_detach(thread_);
    started_ = false;
}

} // namespace gatehouse::limits
