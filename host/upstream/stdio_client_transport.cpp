#include "upstream/stdio_client_transport.hpp"

#include "isolation/own_process_group.hpp"
#include "metrics/log_allowance.hpp"
#include "protocol/json_rpc.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace gatehouse::upstream {

namespace {

using namespace std::chrono_literals;

constexpr auto kWriteStall = 10s; // how long a server may leave its input unread while a message waits

// What a command inherits of the host's environment: the basic variables
// alone. The rest comes from its entry's env.
std::vector<std::string> command_environment(const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> env = isolation::basic_environment();
    for (const auto& [name, value] : extra)
        env[name] = value;
    std::vector<std::string> out;
    for (const auto& [name, value] : env)
        out.push_back(name + "=" + value);
    return out;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
    std::vector<char*> out;
    for (auto& word : words)
        out.push_back(word.data());
    out.push_back(nullptr);
    return out;
}

std::string describe_exit(int status) {
    if (WIFSIGNALED(status)) {
        const char* abbrev = sigabbrev_np(WTERMSIG(status));
        return "it was killed by signal " + std::to_string(WTERMSIG(status)) +
               (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
    }
    if (WIFEXITED(status)) return "it exited with status " + std::to_string(WEXITSTATUS(status));
    return "it ended";
}

} // namespace

StdioClientTransport::StdioClientTransport(Options options) : options_(std::move(options)) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
        ::close(in[0]);
        ::close(in[1]);
        throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
        for (int fd : {in[0], in[1], out[0], out[1]})
            ::close(fd);
        throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    auto args = options_.command;
    auto env = command_environment(options_.env);
    auto argv = pointers(args);
    auto envp = pointers(env);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    // Nothing else of the host's: not the stdio transport's own stdout (kept
    // aside by StdoutDiversion), not a socket, not a file.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (!options_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options_.cwd.c_str());
    // A process group of its own, so what the command starts ends with it.
    const isolation::OwnProcessGroup attributes;
    const int spawned = ::posix_spawnp(&pid_, argv[0], &actions, attributes.get(), argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    if (spawned != 0) {
        ::close(in[1]);
        ::close(out[0]);
        ::close(err[0]);
        throw std::runtime_error("cannot start " + options_.command.front() + ": " + std::strerror(spawned));
    }
    stdin_fd_ = in[1];
    ::fcntl(stdin_fd_, F_SETFL, ::fcntl(stdin_fd_, F_GETFL) | O_NONBLOCK);
    stdout_fd_ = out[0];
    stderr_fd_ = err[0];
    exit_fd_ = isolation::watch_exit(pid_);
    if (exit_fd_ < 0)
        spdlog::warn("[{}] cannot watch its process's end (pidfd_open: {}); a program it starts that keeps its "
                     "output open can hide its end",
                     options_.family, std::strerror(errno));
    try {
        reading_.emplace(
            stdout_fd_, [this] { return read_once(); }, exit_fd_);
        if (!reading_->can_kick())
            spdlog::warn("[{}] cannot make an eventfd ({}); its calls wait for its output's own reader",
                         options_.family, std::strerror(errno));
        log_reader_ = std::thread([this] { copy_log(); });
    } catch (...) {
        // No destructor runs for a half-made transport: the process and its descriptors go here.
        end_process();
        for (int fd : {stdout_fd_, stderr_fd_, exit_fd_})
            if (fd >= 0) ::close(fd);
        throw;
    }
}

StdioClientTransport::~StdioClientTransport() {
    close();
}

void StdioClientTransport::start(Events events) {
    events_ = std::move(events);
    reader_ = std::thread([this] { read_messages(); });
}

// Its stdin is non-blocking: a server that stops reading holds a sender for
// at most kWriteStall, then is ended, since half a line cannot be taken back.
bool StdioClientTransport::send(const nlohmann::json& message) {
    return send_written(protocol::encode(message));
}

bool StdioClientTransport::send_written(std::string line) {
    line += '\n';
    std::lock_guard lock(write_mutex_);
    if (stdin_fd_ < 0) return false;
    const auto until = std::chrono::steady_clock::now() + kWriteStall;
    std::size_t written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(stdin_fd_, line.data() + written, line.size() - written);
        if (n > 0) {
            written += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN) return false; // EPIPE: main ignores SIGPIPE
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        pollfd ready{stdin_fd_, POLLOUT, 0};
        if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) == 0) {
            spdlog::error("[{}] stopped reading its input for {} s; the host ends it", options_.family,
                          std::chrono::duration_cast<std::chrono::seconds>(kWriteStall).count());
            signal_group(SIGKILL);
            return false;
        }
    }
    return true;
}

// The own thread reads while no request waits, so what the server says
// unasked (list_changed, its log) is heard (transport::SharedReading).
void StdioClientTransport::read_messages() {
    reading_->serve_own_thread();
    const std::string ended = end_process();
    reading_done_ = true;
    events_.closed(why_ended_.empty() ? "its output ended: " + ended : why_ended_ + ", so the host ended it");
}

bool StdioClientTransport::read_once() {
    ssize_t n;
    do {
        n = ::read(stdout_fd_, buffer_.data(), buffer_.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    // What was held before this read is part of a line, with no line end in
    // it: only what came is searched, so a line written a few bytes at a time
    // costs its length once, not once a read.
    const std::size_t held = framing_.size();
    framing_.append(buffer_.data(), static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t end, from = held; (end = framing_.find('\n', from)) != std::string::npos; start = from = end + 1) {
        std::string_view line(framing_.data() + start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        // Whatever handling a message throws drops that message, never the reading.
        try {
            events_.message(line, nlohmann::json());
        } catch (const std::exception& e) {
            spdlog::warn("[{}] a message it sent could not be handled: {}", options_.family, e.what());
        }
    }
    framing_.erase(0, start);
    if (framing_.size() > options_.max_message_bytes) {
        why_ended_ = "it sent a message over " + std::to_string(options_.max_message_bytes) +
                     " bytes (limits.max_message_bytes)";
        return false;
    }
    return true;
}

bool StdioClientTransport::read_here(std::chrono::milliseconds patience, const std::function<bool()>& enough,
                                     bool alone) {
    return reading_->read_here(std::chrono::steady_clock::now() + patience, enough, alone);
}

void StdioClientTransport::read_on() {
    reading_->read_on();
}

void StdioClientTransport::copy_log() {
    metrics::LogAllowance allowance(options_.family);
    metrics::copy_lines_to_log(stderr_fd_, allowance, exit_fd_);
}

void StdioClientTransport::close_stdin() {
    std::lock_guard lock(write_mutex_);
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
}

void StdioClientTransport::signal_group(int sig) {
    std::lock_guard lock(pid_mutex_);
    if (pid_ > 0) ::kill(-pid_, sig);
}

// Whether the process has ended within `patience`, without reaping it, so
// its pid (and its group's) stays its own until reap().
bool StdioClientTransport::exited(std::chrono::milliseconds patience) {
    const auto until = std::chrono::steady_clock::now() + patience;
    for (;;) {
        siginfo_t info{};
        {
            std::lock_guard lock(pid_mutex_);
            if (pid_ < 0) return true;
            if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0)
                return true;
        }
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(10ms);
    }
}

// Closes its stdin (a server's cue to stop), then asks its group to end,
// then makes it; says how it ended.
std::string StdioClientTransport::end_process() {
    close_stdin();
    if (!exited(2s)) signal_group(SIGTERM);
    if (!exited(2s)) signal_group(SIGKILL);
    exited(10s);
    // Whatever it started and left behind in its group goes with it.
    signal_group(SIGKILL);
    std::lock_guard lock(pid_mutex_);
    if (pid_ < 0) return "it had ended";
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return describe_exit(status);
}

void StdioClientTransport::close() {
    {
        std::lock_guard lock(write_mutex_);
        if (closing_) return;
        closing_ = true;
    }
    if (reader_.joinable()) {
        // The reader sees its output end once the process is gone, and reaps it.
        close_stdin();
        read_on();
        for (int sig : {SIGTERM, SIGKILL}) {
            if (reading_done_.load()) break;
            const auto until = std::chrono::steady_clock::now() + 2s;
            while (!reading_done_.load() && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(10ms);
            if (!reading_done_.load()) signal_group(sig);
        }
        reader_.join();
    } else {
        end_process();
    }
    if (log_reader_.joinable()) log_reader_.join();
    for (int* fd : {&stdout_fd_, &stderr_fd_, &exit_fd_})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
}

std::string StdioClientTransport::describe() const {
    std::string text;
    for (const auto& word : options_.command)
        text += (text.empty() ? "" : " ") + word;
    return text;
}

} // namespace gatehouse::upstream
