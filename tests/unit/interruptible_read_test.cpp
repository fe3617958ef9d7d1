// A blocking read another thread can end (transport/interruptible_read.hpp):
// stdin's reader waits in read() itself, and a stop must still end it.
#include "transport/interruptible_read.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <chrono>
#include <future>
#include <thread>

using gatehouse::transport::InterruptibleRead;
using namespace std::chrono_literals;

namespace {

struct Pipe {
    int ends[2] = {-1, -1};
    Pipe() { REQUIRE(::pipe(ends) == 0); }
    ~Pipe() {
        ::close(ends[0]);
        ::close(ends[1]);
    }
};

struct Outcome {
    ssize_t n;
    int error;
};

Outcome read_from(InterruptibleRead& reads, int fd) {
    char buffer[16];
    const ssize_t n = reads.read(fd, buffer, sizeof buffer);
    return {n, n < 0 ? errno : 0};
}

// As stdin's reader does: a read that returns EINTR is made again.
Outcome read_past_eintr(InterruptibleRead& reads, int fd) {
    Outcome outcome = read_from(reads, fd);
    while (outcome.n < 0 && outcome.error == EINTR)
        outcome = read_from(reads, fd);
    return outcome;
}

} // namespace

TEST_CASE("an interruptible read reads what is there, and waits for what is not", "[interruptible_read]") {
    Pipe pipe;
    InterruptibleRead reads;
    REQUIRE(::write(pipe.ends[1], "abc", 3) == 3);
    CHECK(read_from(reads, pipe.ends[0]).n == 3);
    auto waiting = std::async(std::launch::async, [&] { return read_from(reads, pipe.ends[0]); });
    CHECK(waiting.wait_for(50ms) == std::future_status::timeout);
    REQUIRE(::write(pipe.ends[1], "d", 1) == 1);
    CHECK(waiting.get().n == 1);
}

TEST_CASE("interrupt ends a read waiting on a pipe no one writes to, and every later read", "[interruptible_read]") {
    Pipe pipe;
    InterruptibleRead reads;
    auto waiting = std::async(std::launch::async, [&] { return read_past_eintr(reads, pipe.ends[0]); });
    CHECK(waiting.wait_for(50ms) == std::future_status::timeout);
    reads.interrupt();
    // A hang guard, not a timing: without the signal the read never returns.
    REQUIRE(waiting.wait_for(10s) == std::future_status::ready);
    const Outcome ended = waiting.get();
    CHECK(ended.n == -1);
    CHECK(ended.error == ECANCELED);
    CHECK(read_from(reads, pipe.ends[0]).error == ECANCELED);
}

TEST_CASE("an interrupt at any moment of a read's start ends it", "[interruptible_read]") {
    // Before the reader's check, between it and its read, or in the read:
    // each ends with ECANCELED. (The narrowest, a signal just before the
    // read begins, is what the interrupt's resending covers.)
    for (int round = 0; round < 200; ++round) {
        Pipe pipe;
        InterruptibleRead reads;
        auto waiting = std::async(std::launch::async, [&] { return read_past_eintr(reads, pipe.ends[0]); });
        if (round % 2) std::this_thread::yield();
        reads.interrupt();
        REQUIRE(waiting.wait_for(10s) == std::future_status::ready);
        CHECK(waiting.get().error == ECANCELED);
    }
}

TEST_CASE("a descriptor made non-blocking by its opener is waited on, and interrupted, all the same",
          "[interruptible_read]") {
    Pipe pipe;
    REQUIRE(::fcntl(pipe.ends[0], F_SETFL, ::fcntl(pipe.ends[0], F_GETFL) | O_NONBLOCK) == 0);
    InterruptibleRead reads;
    // Nothing there: it waits, where a plain read answers EAGAIN (and the
    // reader took that for a broken stdin and stopped).
    auto waiting = std::async(std::launch::async, [&] { return read_past_eintr(reads, pipe.ends[0]); });
    CHECK(waiting.wait_for(50ms) == std::future_status::timeout);
    REQUIRE(::write(pipe.ends[1], "x", 1) == 1);
    CHECK(waiting.get().n == 1);
    auto second = std::async(std::launch::async, [&] { return read_past_eintr(reads, pipe.ends[0]); });
    CHECK(second.wait_for(50ms) == std::future_status::timeout);
    CHECK(reads.interrupt());
    REQUIRE(second.wait_for(10s) == std::future_status::ready);
    CHECK(second.get().error == ECANCELED);
}

TEST_CASE("a reader that blocks the signal is unblocked when it takes the reading over; else interrupt gives up",
          "[interruptible_read]") {
    // A pool's worker inherits the mask of the thread that made it, which
    // may block every signal.
    const auto blocked_reader = [](InterruptibleRead& reads, int fd, bool takes_over) {
        return std::async(std::launch::async, [&reads, fd, takes_over] {
            sigset_t all;
            sigfillset(&all);
            ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
            if (takes_over) reads.read_on_this_thread();
            return read_past_eintr(reads, fd);
        });
    };
    {
        Pipe pipe;
        InterruptibleRead reads;
        auto waiting = blocked_reader(reads, pipe.ends[0], true);
        CHECK(waiting.wait_for(50ms) == std::future_status::timeout);
        CHECK(reads.interrupt());
        REQUIRE(waiting.wait_for(10s) == std::future_status::ready);
        CHECK(waiting.get().error == ECANCELED);
    }
    {
        Pipe pipe;
        InterruptibleRead reads;
        auto waiting = blocked_reader(reads, pipe.ends[0], false);
        CHECK(waiting.wait_for(50ms) == std::future_status::timeout);
        CHECK_FALSE(reads.interrupt());              // after kMostInterruptWait, not for ever
        REQUIRE(::write(pipe.ends[1], "x", 1) == 1); // lets the read end
        REQUIRE(waiting.wait_for(10s) == std::future_status::ready);
        CHECK(waiting.get().n == 1);
    }
}
