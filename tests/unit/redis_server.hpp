#pragma once

// One redis-server of its own (Debian's), on a unix socket in a fresh
// folder, for the tests of what keeps state in Redis.
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#ifdef GATEHOUSE_REDIS_SERVER

namespace gatehouse::test {

// One redis-server of its own, stopped with the test.
class RedisServer {
public:
    explicit RedisServer(std::string password = {}) : password_(std::move(password)) {
        // As the host does (StopSignal): a write to a Redis that went away is
        // an error to handle, not a signal that ends the process.
        std::signal(SIGPIPE, SIG_IGN);
        dir_ = std::filesystem::temp_directory_path() /
               ("gatehouse-redis-" + std::to_string(::getpid()) + "-" + std::to_string(++count_));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
        start();
    }
    ~RedisServer() {
        stop();
        std::filesystem::remove_all(dir_);
    }

    void start() {
        std::vector<std::string> args = {
            GATEHOUSE_REDIS_SERVER, "--port", "0",     "--unixsocket", socket().string(), "--save", "",
            "--appendonly",         "no",     "--dir", dir_.string()};
        if (!password_.empty()) args.insert(args.end(), {"--requirepass", password_});
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            // A test that aborts (a sanitizer report) runs no destructor: the
            // server goes with it instead of holding the test's pipes open.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            std::vector<char*> argv;
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            const int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, STDOUT_FILENO);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        for (int i = 0; i < 500 && !std::filesystem::exists(socket()); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(std::filesystem::exists(socket()));
    }

    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        std::filesystem::remove(socket());
    }

    std::filesystem::path socket() const { return dir_ / "redis.sock"; }
    std::filesystem::path dir() const { return dir_; }

    config::RedisSettings settings(std::string prefix = "test:") const {
        config::RedisSettings s;
        s.url = "unix://" + socket().string();
        s.key_prefix = std::move(prefix);
        s.command_timeout_ms = 2000;
        return s;
    }

private:
    static inline std::atomic<int> count_{0};
    std::string password_;
    std::filesystem::path dir_;
    pid_t pid_ = -1;
};

} // namespace gatehouse::test

#endif
