#include "transport/stdio_transport.hpp"

#include "auth/principal.hpp"
#include "transport/line_framer.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <fcntl.h>
#include <poll.h>
#include <cstring>
#include <mutex>
#include <string>
#include <unistd.h>

namespace gatehouse::transport {

namespace {

// Answers from many workers share one pipe. Whoever finds the pipe free
// writes everything queued so far in one write(2); the others only append
// and return, so under load a syscall carries many answers.
class StdoutOutbound final : public protocol::Outbound {
public:
    explicit StdoutOutbound(int fd) : fd_(fd) {}

    void send(const protocol::Json& message) override {
        std::string line = protocol::encode(message);
        line += '\n';
        std::unique_lock lock(mutex_);
        if (broken_) return;
        pending_ += line;
        if (writing_) return;
        writing_ = true;
        std::string batch;
        while (!pending_.empty() && !broken_) {
            batch.swap(pending_);
            pending_.clear();
            lock.unlock();
            const bool ok = write_all(batch);
            lock.lock();
            if (!ok) broken_ = true; // the client went away; nobody is left to read answers
        }
        writing_ = false;
    }

private:
    bool write_all(const std::string& bytes) const {
        const char* p = bytes.data();
        std::size_t left = bytes.size();
        while (left > 0) {
            const ssize_t n = ::write(fd_, p, left);
            if (n < 0) {
                if (errno == EINTR) continue;
                return false;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        return true;
    }

    int fd_;
    std::mutex mutex_;
    std::string pending_;
    bool writing_ = false;
    bool broken_ = false;
};

} // namespace

StdioTransport::StdioTransport(protocol::McpServer& server, std::size_t max_message_bytes)
    : server_(server), max_message_bytes_(max_message_bytes) {}

int StdioTransport::run(StopSignal& stop) {
    // A stop request wakes the reader through this pipe (poll() watches it
    // beside stdin), so a blocked read never keeps the host from stopping.
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC) != 0) {
        spdlog::critical("cannot create the stop pipe: {}", std::strerror(errno));
        return 1;
    }
    stop.on_stop([fd = wake[1]] { [[maybe_unused]] auto n = ::write(fd, "x", 1); });
    const int protocol_fd = ::dup(STDOUT_FILENO);
    if (protocol_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        spdlog::critical("cannot take over stdout: {}", std::strerror(errno));
        return 1;
    }
    auto outbound = std::make_shared<StdoutOutbound>(protocol_fd);
    auto connection = std::make_shared<protocol::Connection>(outbound, auth::local_principal());
    spdlog::info("serving MCP over stdio as principal '{}'", connection->principal().subject);

    LineFramer framer(max_message_bytes_);
    const LineFramer::LineHandler on_line = [&](std::string_view line) { server_.on_message(connection, line); };
    const LineFramer::OversizeHandler on_oversized = [&] {
        outbound->send(protocol::make_error(nullptr, protocol::error_code::invalid_request,
                                            "The message is larger than " + std::to_string(max_message_bytes_) +
                                                " bytes, this server's limit; it was discarded."));
    };
    std::string buffer(64 * 1024, '\0');
    for (;;) {
        pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {wake[0], POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            spdlog::error("waiting for stdin failed: {}", std::strerror(errno));
            break;
        }
        if (stop.requested()) break;
        const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            spdlog::error("reading stdin failed: {}", std::strerror(errno));
            break;
        }
        if (n == 0) break;
        framer.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)), on_line, on_oversized);
    }
    if (const std::string last = framer.finish(); !stop.requested() && !last.empty())
        server_.on_message(connection, last);
    // End of input is the client's way to shut down: calls already running get
    // a short grace to answer (a piped batch of requests still gets its
    // answers), then whatever is left is cancelled. A stop signal cancels at once.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!stop.requested() && server_.in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    connection->cancel_all();
    ::close(protocol_fd);
    // The stop callback may still fire later (a signal during shutdown); the
    // write end stays open for it and goes with the process.
    ::close(wake[0]);
    return 0;
}

} // namespace gatehouse::transport
