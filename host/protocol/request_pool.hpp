#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gatehouse::protocol {

// A fixed set of worker threads running requests that may take long (tool
// calls), so the reader stays free for ping, tools/list and cancellations.
class RequestPool {
public:
    explicit RequestPool(unsigned workers);
    ~RequestPool();
    RequestPool(const RequestPool&) = delete;
    RequestPool& operator=(const RequestPool&) = delete;

    void submit(std::function<void()> job);

    // Finishes queued jobs, then joins the workers.
    void stop();

private:
    void run();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> jobs_;
    std::vector<std::thread> threads_;
    bool stopping_ = false;
};

} // namespace gatehouse::protocol
