#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// The real gatehouse binary, started with pipes: requests go in as lines on
// stdin, answers come back from stdout; stderr is collected for the checks
// that nothing secret was logged. Uses the stateless 2026-07-28 revision, so
// every request carries its own _meta.
class StdioHost {
public:
    StdioHost(const std::string& config_file, std::map<std::string, std::string> env);
    ~StdioHost();
    StdioHost(const StdioHost&) = delete;
    StdioHost& operator=(const StdioHost&) = delete;

    nlohmann::json request(const std::string& method, nlohmann::json params);

    // The tools/call result object.
    nlohmann::json call(const std::string& tool, nlohmann::json arguments);

    // Closes stdin and waits for the process; returns everything it wrote.
    void stop();
    const std::string& stdout_text() const { return stdout_text_; }
    std::string stderr_text();

private:
    int pid_ = -1;
    int in_ = -1, out_ = -1, err_ = -1;
    int next_id_ = 1;
    std::string buffer_;
    std::string stdout_text_;
    std::string stderr_text_;
    std::mutex stderr_mutex_;
    std::thread stderr_reader_;
};
