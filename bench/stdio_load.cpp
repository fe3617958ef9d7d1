// stdio_load — a cheap MCP client that drives a stdio server with tools/call
// round trips and reports JSON on stdout.
//
//   stdio_load [--era modern|legacy] [--tool NAME] [--calls N] [--in-flight K]
//              [--concurrent-calls M] [--warmup W] [--cold-runs R]
//              [--concurrent-only] -- COMMAND [ARGS...]
//
// One run measures, for the server COMMAND:
//   cold start    R fresh processes, spawn -> first tools/list answer (median, min)
//   idle RSS      VmRSS after start and one tools/list, then 300 ms of nothing
//                 (the median over the R cold starts and the measured one:
//                 where the kernel loads a binary moves from start to start,
//                 and the 64 KiB runs it maps around each page fault with it,
//                 so one start's figure moves by some 150 KiB either way)
//   sequential    N calls, one in flight: calls/s, p50, p99, server CPU per call
//   concurrent    M calls (default N), K in flight: the same figures
// --concurrent-only skips the sequential phase (and its warm-up), so a
// profiler attached to the whole run sees the concurrent path alone.
// Server CPU is utime+stime of the server process (all its threads) and
// its children from /proc/<pid>/stat, read before and after each measured
// phase. The kernel counts it in ticks (10 ms), so a phase's CPU a call is
// a multiple of 10 ms / calls: 0.5 µs for 20 000 calls, which is why the
// concurrent phase may be given more calls (M) than the sequential one.
//
// era modern sends the 2026-07-28 form (_meta with protocolVersion and
// clientCapabilities on every request); era legacy does the 2025-11-25
// initialize handshake first and then sends plain requests.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    bool modern = true;
    std::string tool = "noop";
    int calls = 20000;
    int concurrent_calls = 0; // 0: calls
    int in_flight = 32;
    int warmup = 2000;
    int cold_runs = 10;
    bool concurrent_only = false;
    std::vector<std::string> command;
};

[[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "stdio_load: %s\n", why.c_str());
    std::exit(2);
}

// One server process with its stdin and stdout on pipes; stderr goes to
// /dev/null so a chatty server cannot block on a full pipe.
class ServerProcess {
public:
    explicit ServerProcess(const std::vector<std::string>& command) {
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) die("pipe failed");
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        std::vector<char*> argv;
        for (const auto& a : command)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        started_ = Clock::now();
        if (posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0)
            die("cannot start " + command[0]);
        posix_spawn_file_actions_destroy(&actions);
        ::close(in[0]);
        ::close(out[1]);
        to_server_ = in[1];
        from_server_ = out[0];
    }

    ~ServerProcess() { stop(); }

    void stop() {
        if (pid_ <= 0) return;
        ::close(to_server_); // end of input: the stdio way to ask a server to leave
        const auto deadline = Clock::now() + std::chrono::seconds(5);
        int status = 0;
        while (::waitpid(pid_, &status, WNOHANG) == 0) {
            if (Clock::now() > deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ::close(from_server_);
        pid_ = -1;
    }

    Clock::time_point started() const { return started_; }
    pid_t pid() const { return pid_; }

    void send(const std::string& line) {
        const char* p = line.data();
        std::size_t left = line.size();
        while (left > 0) {
            const ssize_t n = ::write(to_server_, p, left);
            if (n < 0) {
                if (errno == EINTR) continue;
                die("the server closed its input");
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
    }

    // The next line the server writes (without the newline).
    std::string_view read_line() {
        for (;;) {
            if (const auto nl = buffer_.find('\n', scan_); nl != std::string::npos) {
                line_.assign(buffer_, 0, nl);
                buffer_.erase(0, nl + 1);
                scan_ = 0;
                return line_;
            }
            scan_ = buffer_.size();
            char chunk[65536];
            const ssize_t n = ::read(from_server_, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) die("the server closed its output");
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }

    // utime + stime of every thread of the server and of its child
    // processes (a family served with isolation: process), in microseconds.
    double cpu_us() const {
        double total = process_cpu_us(pid_);
        for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
            const auto name = entry.path().filename().string();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            const pid_t pid = static_cast<pid_t>(std::stol(name));
            if (pid != pid_ && parent_of(pid) == pid_) total += process_cpu_us(pid);
        }
        return total;
    }

    // The fields of /proc/<pid>/stat after the command name, from 3 (state) on.
    static std::vector<std::string> stat_fields(pid_t pid) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text((std::istreambuf_iterator<char>(stat)), {});
        const auto close_paren = text.rfind(')');
        std::vector<std::string> out;
        if (close_paren == std::string::npos) return out;
        std::istringstream fields(text.substr(close_paren + 2));
        for (std::string field; out.size() < 13 && fields >> field;)
            out.push_back(field);
        return out;
    }

    static pid_t parent_of(pid_t pid) {
        const auto fields = stat_fields(pid);
        return fields.size() > 1 ? static_cast<pid_t>(std::stol(fields[1])) : -1; // field 4
    }

    static double process_cpu_us(pid_t pid) {
        const auto fields = stat_fields(pid);
        if (fields.size() < 13) return 0;                                     // gone
        const auto ticks = std::stoull(fields[11]) + std::stoull(fields[12]); // fields 14 and 15
        return static_cast<double>(ticks) * 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }

    long rss_kib() const {
        std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
        std::string line;
        while (std::getline(status, line))
            if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
        return -1;
    }

private:
    pid_t pid_ = -1;
    int to_server_ = -1;
    int from_server_ = -1;
    Clock::time_point started_;
    std::string buffer_;
    std::string line_;
    std::size_t scan_ = 0;
};

const char* kMeta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                    R"("io.modelcontextprotocol/clientCapabilities":{}})";

// The id of a response line, or -1 for a notification or a request; the
// client only ever sends integer ids, so a scan is enough.
long response_id(std::string_view line) {
    if (line.find("\"method\"") != std::string_view::npos) return -1;
    const auto at = line.find("\"id\":");
    if (at == std::string_view::npos) return -1;
    return std::strtol(line.data() + at + 5, nullptr, 10);
}

class Session {
public:
    Session(ServerProcess& server, const Options& options) : server_(server), options_(options) {
        call_prefix_ = R"({"jsonrpc":"2.0","id":)";
        call_suffix_ = R"(,"method":"tools/call","params":{"name":")" + options.tool + R"(","arguments":{})";
        call_suffix_ += options.modern ? std::string(",") + kMeta + "}}\n" : "}}\n";
    }

    // Opens the session and waits for the first tools/list answer.
    void open() {
        if (!options_.modern) {
            request(R"("method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
                    R"("clientInfo":{"name":"stdio_load","version":"1"}})");
            server_.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        }
        const std::string list = options_.modern ? std::string(R"("method":"tools/list","params":{)") + kMeta + "}"
                                                 : std::string(R"("method":"tools/list")");
        const std::string answer = request(list);
        if (answer.find("\"" + options_.tool + "\"") == std::string::npos)
            die("tools/list does not name the tool '" + options_.tool + "': " + answer);
    }

    // One request that is not a tool call, answered before anything else goes out.
    std::string request(const std::string& body) {
        const long id = next_id_++;
        server_.send("{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + "," + body + "}\n");
        for (;;) {
            auto line = server_.read_line();
            if (response_id(line) == id) {
                if (line.find("\"error\"") != std::string_view::npos) die("request failed: " + std::string(line));
                return std::string(line);
            }
        }
    }

    struct Phase {
        int calls = 0;
        int in_flight = 0;
        double seconds = 0;
        double server_cpu_us = 0;
        std::vector<double> latencies_us;
    };

    Phase drive(int calls, int in_flight) {
        Phase phase;
        phase.calls = calls;
        phase.in_flight = in_flight;
        phase.latencies_us.reserve(static_cast<std::size_t>(calls));
        const long first_id = next_id_;
        std::vector<Clock::time_point> sent(static_cast<std::size_t>(calls));
        int issued = 0, answered = 0;
        const double cpu_before = server_.cpu_us();
        const auto start = Clock::now();
        auto issue = [&] {
            sent[static_cast<std::size_t>(issued)] = Clock::now();
            server_.send(call_prefix_ + std::to_string(first_id + issued) + call_suffix_);
            ++issued;
        };
        // All of the first window goes out in one write, as a client with K
        // requests ready would send it.
        {
            std::string window;
            const int k = std::min(in_flight, calls);
            const auto now = Clock::now();
            for (int i = 0; i < k; ++i) {
                sent[static_cast<std::size_t>(i)] = now;
                window += call_prefix_ + std::to_string(first_id + i) + call_suffix_;
            }
            issued = k;
            server_.send(window);
        }
        while (answered < calls) {
            auto line = server_.read_line();
            const long id = response_id(line);
            if (id < first_id || id >= first_id + calls) continue;
            const auto now = Clock::now();
            if (line.find("\"isError\":true") != std::string_view::npos ||
                line.find("\"error\"") != std::string_view::npos)
                die("a call failed: " + std::string(line));
            phase.latencies_us.push_back(
                std::chrono::duration<double, std::micro>(now - sent[static_cast<std::size_t>(id - first_id)]).count());
            ++answered;
            if (issued < calls) issue();
        }
        phase.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        phase.server_cpu_us = server_.cpu_us() - cpu_before;
        next_id_ = first_id + calls;
        return phase;
    }

private:
    ServerProcess& server_;
    const Options& options_;
    long next_id_ = 1;
    std::string call_prefix_;
    std::string call_suffix_;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(rank, v.size() - 1)];
}

std::string phase_json(const Session::Phase& p) {
    char out[512];
    std::snprintf(out, sizeof out,
                  R"({"calls":%d,"in_flight":%d,"seconds":%.4f,"calls_per_s":%.0f,"p50_us":%.1f,"p99_us":%.1f,)"
                  R"("max_us":%.1f,"server_cpu_us_per_call":%.2f})",
                  p.calls, p.in_flight, p.seconds, p.calls / p.seconds, percentile(p.latencies_us, 50),
                  percentile(p.latencies_us, 99), percentile(p.latencies_us, 100), p.server_cpu_us / p.calls);
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    int i = 1;
    auto value = [&](const char* flag) -> std::string {
        if (i + 1 >= argc) die(std::string(flag) + " needs a value");
        return argv[++i];
    };
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--") {
            for (++i; i < argc; ++i)
                o.command.emplace_back(argv[i]);
            break;
        }
        if (a == "--era") {
            const auto era = value("--era");
            if (era != "modern" && era != "legacy") die("--era is modern or legacy");
            o.modern = era == "modern";
        } else if (a == "--tool") {
            o.tool = value("--tool");
        } else if (a == "--calls") {
            o.calls = std::stoi(value("--calls"));
        } else if (a == "--concurrent-calls") {
            o.concurrent_calls = std::stoi(value("--concurrent-calls"));
        } else if (a == "--in-flight") {
            o.in_flight = std::stoi(value("--in-flight"));
        } else if (a == "--warmup") {
            o.warmup = std::stoi(value("--warmup"));
        } else if (a == "--cold-runs") {
            o.cold_runs = std::stoi(value("--cold-runs"));
        } else if (a == "--concurrent-only") {
            o.concurrent_only = true;
        } else {
            die("unknown option " + a);
        }
    }
    if (o.command.empty()) die("usage: stdio_load [options] -- COMMAND [ARGS...]");
    if (o.calls < 0 || o.in_flight < 1 || o.concurrent_calls < 0)
        die("--calls and --concurrent-calls must be 0 or more and --in-flight at least 1");
    if (o.concurrent_calls == 0) o.concurrent_calls = o.calls;
    return o;
}

} // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    std::signal(SIGPIPE, SIG_IGN);

    std::vector<double> cold_ms;
    std::vector<double> idle_rss_kib;
    const auto settle_and_measure = [&](const ServerProcess& started) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        idle_rss_kib.push_back(static_cast<double>(started.rss_kib()));
    };
    for (int r = 0; r < options.cold_runs; ++r) {
        ServerProcess server(options.command);
        Session session(server, options);
        session.open();
        cold_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - server.started()).count());
        settle_and_measure(server);
    }

    ServerProcess server(options.command);
    Session session(server, options);
    session.open();
    settle_and_measure(server);
    const long idle_rss = std::lround(percentile(idle_rss_kib, 50));

    // --calls 0: start-up only (cold start and idle RSS), for a tool that
    // cannot be called without a session or arguments.
    std::string sequential = "null", concurrent = "null";
    if (options.calls > 0) {
        if (!options.concurrent_only) {
            if (options.warmup > 0) session.drive(options.warmup, 1);
            sequential = phase_json(session.drive(options.calls, 1));
        }
        if (options.warmup > 0) session.drive(options.warmup, options.in_flight);
        concurrent = phase_json(session.drive(options.concurrent_calls, options.in_flight));
    }
    const long loaded_rss = server.rss_kib();
    server.stop();

    std::printf(R"({"era":"%s","tool":"%s","cold_start_ms":{"runs":%zu,"median":%.2f,"min":%.2f},)"
                R"("idle_rss_kib":%ld,"rss_after_load_kib":%ld,"sequential":%s,"concurrent":%s})"
                "\n",
                options.modern ? "2026-07-28" : "2025-11-25", options.tool.c_str(), cold_ms.size(),
                percentile(cold_ms, 50), cold_ms.empty() ? 0.0 : *std::min_element(cold_ms.begin(), cold_ms.end()),
                idle_rss, loaded_rss, sequential.c_str(), concurrent.c_str());
    return 0;
}
