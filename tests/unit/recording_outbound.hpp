#pragma once

#include "protocol/connection.hpp"
#include "protocol/json_rpc.hpp"

#include <mutex>
#include <utility>
#include <vector>

namespace gatehouse::test {

// An outbound that keeps every message sent to it, for the tests to read, as
// a client reads it: written by protocol::encode, as every transport writes
// it, and parsed back.
class RecordingOutbound final : public protocol::Outbound {
public:
    void send(const protocol::Json& message) override {
        protocol::Json written = protocol::Json::parse(protocol::encode(message));
        std::lock_guard lock(mutex_);
        sent_.push_back(std::move(written));
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
