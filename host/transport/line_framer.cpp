#include "transport/line_framer.hpp"

#include <cstring>

namespace gatehouse::transport {

void LineFramer::feed(std::string_view bytes, const LineHandler& on_line, const OversizeHandler& on_oversized) {
    const char* p = bytes.data();
    const char* end = p + bytes.size();
    while (p < end) {
        const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        const char* stop = newline ? newline : end;
        if (!discarding_) {
            if (line_.size() + static_cast<std::size_t>(stop - p) > max_line_bytes_) {
                line_.clear();
                line_.shrink_to_fit();
                discarding_ = true;
                on_oversized();
            } else {
                line_.append(p, stop);
            }
        }
        if (!newline) break;
        if (!discarding_) {
            if (!line_.empty() && line_.back() == '\r') line_.pop_back();
            if (!line_.empty()) on_line(line_);
        }
        line_.clear();
        discarding_ = false;
        p = newline + 1;
    }
}

std::string LineFramer::finish() {
    std::string last;
    if (!discarding_) last.swap(line_);
    line_.clear();
    discarding_ = false;
    return last;
}

} // namespace gatehouse::transport
