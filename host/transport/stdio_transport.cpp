#include "transport/stdio_transport.hpp"

#include "auth/principal.hpp"
#include "transport/line_framer.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>
#include <unistd.h>

namespace gatehouse::transport {

namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

void on_stop_signal(int) {
    g_stop_requested = 1;
}

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; // no SA_RESTART: a blocked read() returns EINTR so the loop sees the flag
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

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

int StdioTransport::run(protocol::RequestPool& pool) {
    install_signal_handlers();
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
        if (g_stop_requested) break;
        const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            spdlog::error("reading stdin failed: {}", std::strerror(errno));
            break;
        }
        if (n == 0) break;
        framer.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)), on_line, on_oversized);
    }
    if (const std::string last = framer.finish(); !g_stop_requested && !last.empty())
        server_.on_message(connection, last);
    // End of input is the client's way to shut down: calls already running get
    // a short grace to answer (a piped batch of requests still gets its
    // answers), then whatever is left is cancelled. A stop signal cancels at once.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!g_stop_requested && server_.in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    connection->cancel_all();
    // Cancelled calls return quickly from a plugin that polls is_cancelled;
    // one that ignores it is left behind (the caller sees pool.stopped()).
    if (!pool.stop(std::chrono::seconds(5)))
        spdlog::error("a worker did not return within 5 s of cancellation: a plugin ignores is_cancelled");
    ::close(protocol_fd);
    return 0;
}

} // namespace gatehouse::transport
