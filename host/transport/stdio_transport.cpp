#include "transport/stdio_transport.hpp"

#include "auth/principal.hpp"
#include "transport/call_placement.hpp"
#include "transport/inline_call_watch.hpp"
#include "transport/interruptible_read.hpp"
#include "transport/line_framer.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <fcntl.h>
#include <poll.h>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
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
        const std::string encoded = protocol::encode(message);
        std::unique_lock lock(mutex_);
        // A client that stops reading its stdout: answers wait here for the
        // pipe instead of piling up in memory, and a reader waiting here
        // reads no more requests until the client reads again.
        drained_.wait(lock, [this] { return broken_ || !writing_ || pending_.size() < kMaxPendingBytes; });
        if (broken_) return;
        pending_ += encoded;
        pending_ += '\n';
        if (!held_ || pending_.size() >= kMaxPendingBytes) drain(lock);
    }

    // While the reader answers the lines of one read itself, their answers
    // (and whatever workers send meanwhile) wait, to leave in one write once
    // it has run out of lines.
    void hold() {
        std::lock_guard lock(mutex_);
        held_ = true;
    }
    void release() {
        std::unique_lock lock(mutex_);
        held_ = false;
        drain(lock);
    }

    // The end of the transport: nothing is written from here on, and the
    // descriptor is closed (the client reads its end of stdout) once no
    // write is under way. A message sent later, by a call still running in
    // the workers' grace or a change announced meanwhile, is dropped: it
    // can never reach a file that reused the descriptor's number. A write
    // still blocked after `wait` (a client that stopped reading) keeps the
    // descriptor open; the process's end closes it.
    void close_when_drained(std::chrono::milliseconds wait) {
        std::unique_lock lock(mutex_);
        broken_ = true;
        drained_.notify_all();
        if (!drained_.wait_for(lock, wait, [this] { return !writing_; })) return;
        ::close(fd_);
    }

private:
    void drain(std::unique_lock<std::mutex>& lock) {
        if (writing_) return;
        writing_ = true;
        while (!pending_.empty() && !broken_) {
            // The two buffers trade places and keep their capacity, so
            // answers are queued and written without allocating.
            batch_.swap(pending_);
            pending_.clear();
            drained_.notify_all();
            lock.unlock();
            const bool ok = write_all(batch_);
            batch_.clear();
            if (batch_.capacity() > kKeptBatchBytes) batch_.shrink_to_fit(); // a large answer's room is not kept
            lock.lock();
            if (!ok) broken_ = true; // the client went away; nobody is left to read answers
        }
        writing_ = false;
        drained_.notify_all();
    }

    bool write_all(const std::string& bytes) const {
        const char* p = bytes.data();
        std::size_t left = bytes.size();
        while (left > 0) {
            const ssize_t n = ::write(fd_, p, left);
            if (n < 0) {
                if (errno == EINTR) continue;
                // A stdout the parent made non-blocking (its end and ours
                // share the flag when it is one open file) is full, not gone:
                // wait for room.
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    pollfd room{fd_, POLLOUT, 0};
                    if (::poll(&room, 1, -1) < 0 && errno != EINTR) return false;
                    continue;
                }
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
    // Past this, senders wait for the writer (one answer always gets in).
    static constexpr std::size_t kMaxPendingBytes = 32 * 1024 * 1024;
    std::condition_variable drained_;
    static constexpr std::size_t kKeptBatchBytes = 64 * 1024;
    std::string batch_; // being written; touched only by the one writer (writing_)
    bool writing_ = false;
    bool held_ = false;
    bool broken_ = false;
};

// The reading of stdin, passed from worker to worker (leader/follower).
// Whoever holds it reads and answers cheap requests in order. A call of a
// quick tool (plugins::CallPace) it runs itself too while a worker is free to
// take the reading over, watched: should the call outlast a tick, the watch
// hands the reading to that worker. On reading any other call it hands the
// reading to an idle worker and runs the call itself, so the answer's
// critical path has no thread hand-off (the wake-up of the next reader
// happens beside the call, not before it). With no idle worker the call
// queues as usual and the holder keeps reading, so stdin is always read and
// a cancellation always arrives.
class StdinReader : public std::enable_shared_from_this<StdinReader> {
public:
    // Long enough for any call CallPace deems quick (under 0.5 ms), short
    // enough that a call turning slow holds up the next lines unnoticeably.
    static constexpr std::chrono::microseconds kInlineTick{1000};

    StdinReader(protocol::McpServer& server, protocol::RequestPool& pool, StopSignal& stop,
                std::shared_ptr<protocol::Connection> connection, std::shared_ptr<StdoutOutbound> outbound,
                std::shared_ptr<InterruptibleRead> stdin_reads, std::size_t max_message_bytes)
        : server_(server), pool_(pool), stop_(stop), connection_(std::move(connection)), outbound_(std::move(outbound)),
          stdin_reads_(std::move(stdin_reads)), max_message_bytes_(max_message_bytes), framer_(max_message_bytes),
          buffer_(64 * 1024, '\0'), watch_(kInlineTick, [this] { hand_on(); }) {}

    void read() {
        stdin_reads_->read_on_this_thread(); // this thread takes the reading over
        for (;;) {
            if (lines_.empty()) {
                outbound_->release();
                if (!fill()) return end();
                outbound_->hold();
                continue;
            }
            const std::string line = std::move(lines_.front());
            lines_.pop_front();
            protocol::ReadyCall call;
            // A fault while one line is handled loses that line's answer,
            // not the reading: thrown on from here, it would end the reading
            // with answers held, and the host would hang.
            try {
                call = server_.answer(connection_, server_.decode_text(connection_, line));
            } catch (const std::exception& e) {
                spdlog::error("a message from stdin could not be handled: {}", e.what());
                continue;
            }
            if (!call) continue;
            const CallSite site = place_stdio_call(
                call, !lines_.empty(), [this] { return pool_.has_free_worker(); }, [this] { return watch_.ready(); });
            if (site == CallSite::reader_watched) {
                const std::uint64_t token = watch_.begin();
                try {
                    call.run();
                } catch (const std::exception& e) {
                    spdlog::error("a call read from stdin failed and was abandoned: {}", e.what());
                }
                if (!watch_.end(token)) return; // it ran long: another worker reads on
                // This thread reads on: a parked call its call handed a place
                // to goes to the pool (submit_next), not after the reading.
                pool_.release_next();
                continue;
            }
            // Answers held so far leave now: this thread may not read again for long.
            outbound_->release();
            std::function<void()> next = [self = shared_from_this()] { self->read(); };
            if (pool_.submit_if_idle(next)) {
                call.run();
                return;
            }
            outbound_->hold();
            pool_.submit(std::move(call.run));
        }
    }

    // Until the reading ends: end of input, a stop request, or a read error.
    // No take-over happens afterwards.
    void wait_until_ended() {
        {
            std::unique_lock lock(mutex_);
            ended_changed_.wait(lock, [this] { return ended_; });
        }
        watch_.stop();
    }

    // A stop whose interrupt could not end the read of stdin (a read the
    // kernel does not interrupt): the transport stops without the reading,
    // whose thread is then one the pool cannot join (the host ends as it
    // does for a plugin that ignores cancellation).
    void abandon() {
        spdlog::error("stdin's read did not end within {} ms of the stop; stopping without it",
                      InterruptibleRead::kMostInterruptWait.count());
        end();
    }

private:
    // Reads until at least one line is waiting; false at the end.
    bool fill() {
        while (lines_.empty()) {
            if (input_ended_ || stop_.requested()) return false;
            // Waits in the read itself; a stop interrupts it (ECANCELED).
            const ssize_t n = stdin_reads_->read(STDIN_FILENO, buffer_.data(), buffer_.size());
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == ECANCELED) return false;
                spdlog::error("reading stdin failed: {}", std::strerror(errno));
                return false;
            }
            // What came as the stop did is not read: as if it came after.
            if (stop_.requested()) return false;
            if (n == 0) {
                input_ended_ = true;
                if (std::string last = framer_.finish(); !last.empty()) lines_.push_back(std::move(last));
                continue;
            }
            framer_.feed(
                std::string_view(buffer_.data(), static_cast<std::size_t>(n)),
                [this](std::string_view line) { lines_.emplace_back(line); },
                [this] {
                    outbound_->send(protocol::make_error(nullptr, protocol::error_code::invalid_request,
                                                         "The message is larger than " +
                                                             std::to_string(max_message_bytes_) +
                                                             " bytes, this server's limit; it was discarded."));
                });
        }
        return true;
    }

    // The watch's thread: a call run by the reader outlasted a tick. The
    // reading goes ahead of queued calls: their cancellations arrive through it.
    void hand_on() {
        pool_.submit_first([self = shared_from_this()] { self->read(); });
    }

    void end() {
        std::lock_guard lock(mutex_);
        ended_ = true;
        ended_changed_.notify_all();
    }

    protocol::McpServer& server_;
    protocol::RequestPool& pool_;
    StopSignal& stop_;
    const std::shared_ptr<protocol::Connection> connection_;
    const std::shared_ptr<StdoutOutbound> outbound_;
    const std::shared_ptr<InterruptibleRead> stdin_reads_;
    const std::size_t max_message_bytes_;
    // Touched only by the reader of the moment; the pool's lock orders one
    // reader's last access before the next one's first.
    LineFramer framer_;
    std::string buffer_;
    std::deque<std::string> lines_;
    bool input_ended_ = false;
    InlineCallWatch watch_;

    std::mutex mutex_;
    std::condition_variable ended_changed_;
    bool ended_ = false;
};

} // namespace

StdioTransport::StdioTransport(protocol::McpServer& server, protocol::RequestPool& pool, std::size_t max_message_bytes)
    : server_(server), pool_(pool), max_message_bytes_(max_message_bytes) {}

int StdioTransport::run(StopSignal& stop) {
    // A stop request interrupts the reader's read of stdin, so a blocked
    // read never keeps the host from stopping. Kept by the callback, which
    // may still run after the reading ended (a signal during shutdown).
    std::shared_ptr<InterruptibleRead> stdin_reads;
    try {
        stdin_reads = std::make_shared<InterruptibleRead>();
    } catch (const std::system_error& e) {
        spdlog::critical("cannot serve stdio: {}", e.what());
        return 1;
    }
    // Close-on-exec: no process the host starts (an upstream server, a
    // family's child) may write to the agent as if it were the host.
    const int protocol_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    if (protocol_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        spdlog::critical("cannot take over stdout: {}", std::strerror(errno));
        return 1;
    }
    auto outbound = std::make_shared<StdoutOutbound>(protocol_fd);
    auto connection = std::make_shared<protocol::Connection>(outbound, auth::local_principal());
    spdlog::info("serving MCP over stdio as principal '{}'", connection->principal().subject);

    // The reading runs on the pool (which has a worker more than calls may
    // use when stdio is served); this thread waits for it to end.
    auto reader =
        std::make_shared<StdinReader>(server_, pool_, stop, connection, outbound, stdin_reads, max_message_bytes_);
    stop.on_stop([stdin_reads, reader] {
        if (!stdin_reads->interrupt()) reader->abandon();
    });
    pool_.submit([reader] { reader->read(); });
    reader->wait_until_ended();

    // End of input is the client's way to shut down: calls already running get
    // a short grace to answer (a piped batch of requests still gets its
    // answers), then whatever is left is cancelled. A stop signal cancels at once.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!stop.requested() && server_.in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    connection->stop_following();
    connection->cancel_all();
    outbound->close_when_drained(std::chrono::seconds(1));
    return 0;
}

} // namespace gatehouse::transport
