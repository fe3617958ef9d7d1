#pragma once

#include "protocol/connection.hpp"

#include <mutex>
#include <utility>
#include <vector>

namespace gatehouse::test {

// An outbound that keeps every message sent to it, for the tests to read.
class RecordingOutbound final : public protocol::Outbound {
public:
    void send(const protocol::Json& message) override {
        std::lock_guard lock(mutex_);
        sent_.push_back(message);
    }
    std::vector<protocol::Json> take() {
        std::lock_guard lock(mutex_);
        return std::exchange(sent_, {});
    }

private:
    std::mutex mutex_;
    std::vector<protocol::Json> sent_;
};

} // namespace gatehouse::test
