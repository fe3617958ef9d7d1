#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace gatehouse::transport {

// Cuts a byte stream into newline-delimited messages, whatever the read sizes.
// A line longer than the limit is reported once and its bytes are dropped up
// to the next newline without being kept, so one huge line never grows memory.
class LineFramer {
public:
    using LineHandler = std::function<void(std::string_view line)>;
    using OversizeHandler = std::function<void()>;

    explicit LineFramer(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

    // Hands each complete non-empty line (without "\n" or a "\r" before it) to
    // on_line, and calls on_oversized once for each line over the limit.
    void feed(std::string_view bytes, const LineHandler& on_line, const OversizeHandler& on_oversized);

    // At end of input: the last line when it had no newline, is not empty and
    // kept within the limit; otherwise empty.
    std::string finish();

private:
    std::size_t max_line_bytes_;
    std::string line_;
    bool discarding_ = false; // inside a line that already broke the size limit
};

} // namespace gatehouse::transport
