#pragma once

#include "transport/shared_reading.hpp"
#include "upstream/client_transport.hpp"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gatehouse::upstream {

// An upstream started as a command: newline-delimited JSON-RPC on its stdin
// and stdout (MCP's stdio transport), its stderr into the host's log line
// by line under its family's name. It runs in a process group of its own,
// so ending it ends what it started (npx starts node).
class StdioClientTransport final : public ClientTransport {
public:
    struct Options {
        std::string family;                     // names its log lines
        std::vector<std::string> command;       // the program (looked up on PATH) and its arguments
        std::map<std::string, std::string> env; // over the few variables it inherits
        std::filesystem::path cwd;              // empty: the host's
        std::size_t max_message_bytes = 4 * 1024 * 1024;
    };

    // Throws std::runtime_error when the command cannot be started.
    explicit StdioClientTransport(Options options);
    ~StdioClientTransport() override;

    void start(Events events) override;
    bool read_here(std::chrono::milliseconds patience, const std::function<bool()>& enough, bool alone) override;
    void read_on() override;
    bool send(const nlohmann::json& message) override;
    bool send_written(std::string message) override;
    void close() override;
    std::string describe() const override;

private:
    Options options_;
    pid_t pid_ = -1;
    int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
    // Readable once the process has ended (a pidfd): its output and log are
    // then read to what they hold, not until every writer closes them, which
    // a daemon it started in a session of its own may never do.
    int exit_fd_ = -1;
    std::thread reader_, log_reader_;
    std::mutex write_mutex_, pid_mutex_;
    bool closing_ = false;
    std::atomic<bool> reading_done_{false};
    Events events_;

    // Who reads the server's output: the transport's own thread while no
    // request waits, the caller of a request that waits alone (read_here),
    // never two at once. What the reader holds (the line being framed, the
    // buffer) is touched by the one holding the reading only.
    std::optional<transport::SharedReading> reading_;
    std::string framing_, why_ended_;
    std::vector<char> buffer_ = std::vector<char>(64 * 1024);

    void read_messages();
    // Reads what is there (the reading held) and delivers each whole line;
    // false at the output's end, or once a line outgrows the bound.
    bool read_once();
    void copy_log();
    void close_stdin();
    void signal_group(int sig);
    bool exited(std::chrono::milliseconds patience);
    std::string end_process();
};

} // namespace gatehouse::upstream
