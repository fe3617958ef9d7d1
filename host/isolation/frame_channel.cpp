#include "isolation/frame_channel.hpp"

#include <poll.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gatehouse::isolation {

namespace {

// length (of what follows it), type, three zero bytes, code, index, id, field count.
constexpr std::size_t kHeaderBytes = 4 + 4 + 4 + 4 + 8 + 4;

template <class T> void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T> T get(const char* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

} // namespace

const std::string& Frame::field(std::size_t i) const {
    static const std::string kEmpty;
    return i < fields.size() ? fields[i] : kEmpty;
}

std::size_t Frame::length() const {
    std::size_t bytes = kHeaderBytes - 4;
    for (const auto& f : fields)
        bytes += 4 + f.size();
    return bytes;
}

namespace {

void set_non_blocking(int fd, bool non_blocking) {
    if (fd < 0) return;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, non_blocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

} // namespace

FrameChannel::FrameChannel(int socket) : input_(socket), output_(socket), socket_(true) {}

FrameChannel::FrameChannel(int input, int output) : input_(input), output_(output), socket_(false) {
    set_non_blocking(input_, true);
    set_non_blocking(output_, true);
}

void FrameChannel::block_on_reads() {
    if (!socket_) set_non_blocking(input_, false); // a socket's reader waits in poll (read_some)
}

FrameChannel::~FrameChannel() {
    if (input_ >= 0) ::close(input_);
    if (!socket_ && output_ >= 0) ::close(output_);
}

bool FrameChannel::send(const Frame& frame, int& error) {
    const std::size_t total = 4 + frame.length();
    std::string bytes;
    bytes.reserve(total);
    put<std::uint32_t>(bytes, static_cast<std::uint32_t>(total - 4));
    put<std::uint8_t>(bytes, static_cast<std::uint8_t>(frame.type));
    bytes.append(3, '\0');
    put<std::int32_t>(bytes, frame.code);
    put<std::uint32_t>(bytes, frame.index);
    put<std::uint64_t>(bytes, frame.id);
    put<std::uint32_t>(bytes, static_cast<std::uint32_t>(frame.fields.size()));
    for (const auto& field : frame.fields) {
        put<std::uint32_t>(bytes, static_cast<std::uint32_t>(field.size()));
        bytes.append(field);
    }
    using Clock = std::chrono::steady_clock;
    const auto deadline = send_bound_ ? std::optional(Clock::now() + *send_bound_) : std::nullopt;
    std::lock_guard lock(send_mutex_);
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        if (shut_) {
            error = EPIPE;
            return false;
        }
        // A socket is asked not to raise SIGPIPE; a pipe's writer is a
        // process that ignores it (the host, a family's process).
        const ssize_t n = socket_ ? ::send(output_, bytes.data() + sent, bytes.size() - sent,
                                           MSG_NOSIGNAL | (deadline ? MSG_DONTWAIT : 0))
                                  : ::write(output_, bytes.data() + sent, bytes.size() - sent);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && (deadline || !socket_)) {
            int wait_ms = -1; // a pipe without a bound waits as a blocking socket would
            if (deadline) {
                const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
                if (left.count() <= 0) {
                    error = EAGAIN;
                    return false;
                }
                wait_ms = static_cast<int>(left.count());
            }
            pollfd room{output_, POLLOUT, 0};
            (void)::poll(&room, 1, wait_ms);
            continue;
        }
        if (n <= 0) {
            error = n < 0 ? errno : EPIPE;
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

bool FrameChannel::read_some() {
    if (in_start_ == in_end_) {
        in_start_ = in_end_ = 0;
    } else if (in_end_ == in_.size()) {
        // Full: move the unread bytes to the front, or grow for a frame
        // larger than the buffer (its length was checked against the bound).
        if (in_start_ > 0) {
            std::memmove(in_.data(), in_.data() + in_start_, in_end_ - in_start_);
            in_end_ -= in_start_;
            in_start_ = 0;
        } else {
            in_.resize(in_.size() * 2);
        }
    }
    // Waits in poll for input alone, not in a blocking read: a socket's
    // readers and writers sleep on one queue, and a recv asleep there is
    // woken each time the other end takes what this end sent (room to
    // write again), a wake-up a call for nothing; poll's wait ignores those.
    ssize_t n;
    for (;;) {
        char* into = in_.data() + in_end_;
        const std::size_t room = in_.size() - in_end_;
        n = socket_ ? ::recv(input_, into, room, MSG_DONTWAIT) : ::read(input_, into, room);
        if (n >= 0) break;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
        pollfd input{input_, POLLIN, 0};
        if (::poll(&input, 1, -1) < 0 && errno != EINTR) return false;
    }
    if (n == 0) return false;
    in_end_ += static_cast<std::size_t>(n);
    return true;
}

std::optional<Frame> FrameChannel::next_buffered() {
    const std::size_t unread = in_end_ - in_start_;
    if (unread < 4) return std::nullopt;
    const auto length = get<std::uint32_t>(in_.data() + in_start_);
    if (length < kHeaderBytes - 4 || length > kMaxFrameBytes)
        throw BrokenChannel("a frame of " + std::to_string(length) + " bytes is beyond the bounds (" +
                            std::to_string(kHeaderBytes - 4) + " to " + std::to_string(kMaxFrameBytes) + ")");
    const std::size_t whole = 4 + static_cast<std::size_t>(length);
    if (unread < whole) {
        // Room for the whole frame, so the reads to come can complete it.
        if (in_.size() - in_start_ < whole) {
            std::memmove(in_.data(), in_.data() + in_start_, unread);
            in_start_ = 0;
            in_end_ = unread;
            if (in_.size() < whole) in_.resize(whole);
        }
        return std::nullopt;
    }
    const char* at = in_.data() + in_start_ + 4;
    const char* end = at + length;
    Frame frame;
    frame.type = static_cast<FrameType>(get<std::uint8_t>(at));
    frame.code = get<std::int32_t>(at + 4);
    frame.index = get<std::uint32_t>(at + 8);
    frame.id = get<std::uint64_t>(at + 12);
    const auto count = get<std::uint32_t>(at + 20);
    at += kHeaderBytes - 4;
    if (count > kMaxFrameFields)
        throw BrokenChannel("a frame of " + std::to_string(count) + " fields is beyond the bound of " +
                            std::to_string(kMaxFrameFields));
    frame.fields.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
        if (end - at < 4) throw BrokenChannel("field " + std::to_string(i) + " runs past its frame");
        const auto size = get<std::uint32_t>(at);
        at += 4;
        if (static_cast<std::size_t>(end - at) < size)
            throw BrokenChannel("field " + std::to_string(i) + " runs past its frame");
        frame.fields.emplace_back(at, size);
        at += size;
    }
    if (at != end) throw BrokenChannel("a frame has bytes after its last field");
    in_start_ += whole;
    // A buffer grown for one large frame goes back to its usual size.
    if (in_start_ == in_end_ && in_.size() > 64 * 1024) {
        in_.resize(64 * 1024);
        in_.shrink_to_fit();
        in_start_ = in_end_ = 0;
    }
    return frame;
}

std::optional<Frame> FrameChannel::receive() {
    for (;;) {
        if (auto frame = next_buffered()) return frame;
        if (!read_some()) {
            if (!holds_partial()) return std::nullopt;
            throw BrokenChannel(in_end_ - in_start_ < 4 ? "the stream ended inside a frame's length"
                                                        : "the stream ended inside a frame");
        }
    }
}

void FrameChannel::shut_down() {
    shut_ = true;
    // A socket is shut both ways, which wakes a reader or a writer blocked
    // on it. Pipes stay open until the channel is destroyed: closing one
    // here could hand its number to another file under a send still
    // looping on it, and the other end has ended or is being killed.
    if (socket_) ::shutdown(input_, SHUT_RDWR);
}

std::string number_field(double value) {
    std::string out;
    put(out, value);
    return out;
}

std::string number_field(std::uint64_t value) {
    std::string out;
    put(out, value);
    return out;
}

double field_double(std::string_view field) {
    return field.size() == sizeof(double) ? get<double>(field.data()) : 0.0;
}

std::uint64_t field_u64(std::string_view field) {
    return field.size() == sizeof(std::uint64_t) ? get<std::uint64_t>(field.data()) : 0;
}

} // namespace gatehouse::isolation
