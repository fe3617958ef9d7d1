#include "stdio_host.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#ifndef GATEHOUSE_BINARY
#error "GATEHOUSE_BINARY must name the gatehouse executable"
#endif

StdioHost::StdioHost(const std::string& config_file, std::map<std::string, std::string> env) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC))
        throw std::runtime_error("pipe failed");
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e) {
        std::string entry = *e;
        const auto key = entry.substr(0, entry.find('='));
        if (!env.count(key) && key != "GATEHOUSE_STORE_PASSWORD" && key != "GATEHOUSE_LOG") env_text.push_back(entry);
    }
    env.emplace("GATEHOUSE_LOG", "info");
    for (const auto& [k, v] : env)
        env_text.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_text)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string binary = GATEHOUSE_BINARY, serve = "serve", flag = "--config", file = config_file;
    char* argv[] = {binary.data(), serve.data(), flag.data(), file.data(), nullptr};

    pid_ = ::fork();
    if (pid_ == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::execve(binary.c_str(), argv, envp.data());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
    stderr_reader_ = std::thread([this] {
        char chunk[4096];
        ssize_t n;
        while ((n = ::read(err_, chunk, sizeof chunk)) > 0) {
            std::lock_guard lock(stderr_mutex_);
            stderr_text_.append(chunk, static_cast<std::size_t>(n));
        }
    });
}

StdioHost::~StdioHost() {
    try {
        stop();
    } catch (...) {
    }
}

void StdioHost::stop() {
    if (pid_ < 0) return;
    if (in_ >= 0) ::close(in_), in_ = -1;
    // Drain what is left on stdout so the checks see everything written.
    char chunk[4096];
    ssize_t n;
    pollfd p{out_, POLLIN, 0};
    while (::poll(&p, 1, 5000) > 0 && (n = ::read(out_, chunk, sizeof chunk)) > 0)
        stdout_text_.append(chunk, static_cast<std::size_t>(n));
    int status = 0;
    for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
        ::usleep(50000);
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    ::close(out_);
    if (stderr_reader_.joinable()) stderr_reader_.join();
    ::close(err_);
}

std::string StdioHost::stderr_text() {
    std::lock_guard lock(stderr_mutex_);
    return stderr_text_;
}

nlohmann::json StdioHost::request(const std::string& method, nlohmann::json params) {
    const int id = next_id_++;
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()}};
    const std::string line =
        nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
    if (::write(in_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error("cannot write to the host");
    for (;;) {
        auto newline = buffer_.find('\n');
        while (newline == std::string::npos) {
            pollfd p{out_, POLLIN, 0};
            if (::poll(&p, 1, 20000) <= 0) throw std::runtime_error("the host did not answer " + method);
            char chunk[65536];
            const ssize_t n = ::read(out_, chunk, sizeof chunk);
            if (n <= 0) throw std::runtime_error("the host closed stdout (stderr: " + stderr_text() + ")");
            buffer_.append(chunk, static_cast<std::size_t>(n));
            stdout_text_.append(chunk, static_cast<std::size_t>(n));
            newline = buffer_.find('\n');
        }
        auto message = nlohmann::json::parse(buffer_.substr(0, newline));
        buffer_.erase(0, newline + 1);
        if (message.contains("id") && message["id"] == id) return message;
    }
}

nlohmann::json StdioHost::call(const std::string& tool, nlohmann::json arguments) {
    auto answer = request("tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
    if (!answer.contains("result")) throw std::runtime_error("tools/call failed: " + answer.dump());
    return answer["result"];
}
