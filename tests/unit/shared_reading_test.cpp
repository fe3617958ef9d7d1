// transport::SharedReading with an end descriptor: once the writer is gone,
// the stream ends with what it holds, whoever else keeps it open.
#include "transport/shared_reading.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

using gatehouse::transport::SharedReading;

namespace {

// A pipe whose write end the test keeps open (as a daemon would), and an
// end descriptor it makes readable (as a process's pidfd is once it ended).
struct HeldPipe {
    int read_end = -1, write_end = -1, end = -1;
    std::string got;
    HeldPipe() {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        read_end = fds[0];
        write_end = fds[1];
        end = ::eventfd(0, EFD_CLOEXEC);
        REQUIRE(end >= 0);
    }
    ~HeldPipe() {
        for (int fd : {read_end, write_end, end})
            ::close(fd);
    }
    void write(const std::string& text) const {
        REQUIRE(::write(write_end, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    }
    void writer_gone() const {
        const std::uint64_t one = 1;
        REQUIRE(::write(end, &one, sizeof one) == sizeof one);
    }
    // One read of what the pipe holds, as a transport's read_available does.
    bool read_available() {
        char buffer[4096];
        const ssize_t n = ::read(read_end, buffer, sizeof buffer);
        if (n <= 0) return false;
        got.append(buffer, static_cast<std::size_t>(n));
        return true;
    }
};

} // namespace

TEST_CASE("the own thread reads to what the stream held when its writer went, then ends", "[shared_reading]") {
    HeldPipe pipe;
    SharedReading reading(
        pipe.read_end, [&] { return pipe.read_available(); }, pipe.end);
    pipe.write("the last answer\n");
    pipe.writer_gone();
    std::thread own([&] { reading.serve_own_thread(); }); // returns though the write end stays open
    own.join();
    CHECK(pipe.got == "the last answer\n");
    CHECK_FALSE(reading.read_here(
        std::chrono::steady_clock::now() + std::chrono::seconds(1), [] { return false; },
        true)); // ended: no one reads any more
}

TEST_CASE("a caller reading alone when the writer goes reads what is there, and the stream ends", "[shared_reading]") {
    HeldPipe pipe;
    SharedReading reading(
        pipe.read_end, [&] { return pipe.read_available(); }, pipe.end);
    std::thread own([&] { reading.serve_own_thread(); });
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pipe.write("answered, then gone\n");
        pipe.writer_gone();
    });
    const auto started = std::chrono::steady_clock::now();
    // The caller's wait ends with the stream, long before its own deadline.
    reading.read_here(
        started + std::chrono::seconds(30), [&] { return false; }, true);
    writer.join();
    own.join();
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    CHECK(pipe.got == "answered, then gone\n");
}

TEST_CASE("a writer left behind that never stops writing does not keep the ending reader", "[shared_reading]") {
    HeldPipe pipe;
    ::fcntl(pipe.write_end, F_SETFL, ::fcntl(pipe.write_end, F_GETFL) | O_NONBLOCK);
    std::atomic<bool> writing{true};
    std::thread daemon([&] {
        const std::string line = std::string(100, 'd') + "\n";
        while (writing)
            if (::write(pipe.write_end, line.data(), line.size()) < 0)
                std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
    SharedReading reading(
        pipe.read_end, [&] { return pipe.read_available(); }, pipe.end);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pipe.writer_gone();
    const auto started = std::chrono::steady_clock::now();
    std::thread own([&] { reading.serve_own_thread(); });
    own.join();
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    // What it read after the end: at most kMostDrainReads reads' worth.
    CHECK(pipe.got.size() <= (SharedReading::kMostDrainReads + 64) * 4096);
    writing = false;
    daemon.join();
}
