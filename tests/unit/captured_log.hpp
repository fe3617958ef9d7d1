#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>

namespace gatehouse::test {

// The default logger's lines ("level text"), into `out`, while it lives.
// Read it only once the threads that log are done.
struct CapturedLog {
    std::ostringstream out;
    std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
    CapturedLog() {
        auto logger =
            std::make_shared<spdlog::logger>("captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
        logger->set_pattern("%l %v");
        spdlog::set_default_logger(logger);
    }
    ~CapturedLog() { spdlog::set_default_logger(previous); }
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;

    // How many times `what` occurs in what was logged.
    std::size_t count(const std::string& what) const {
        const std::string text = out.str();
        std::size_t n = 0;
        for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
            ++n;
        return n;
    }
};

} // namespace gatehouse::test
