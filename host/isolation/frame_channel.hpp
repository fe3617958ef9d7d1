#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::isolation {

// What one frame between the host and a family's child process says. The
// host writes the first group, the child the second; both sides are the
// same binary, so integers travel in the machine's own byte order.
enum class FrameType : std::uint8_t {
    // host -> child
    init = 1,       // fields: [config JSON]
    call = 2,       // code: CallKind, index: the descriptor entry, fields: the call's strings
    cancel = 3,     // id: the call the agent cancelled
    host_reply = 4, // id, code: status; fields: [answer]
    shutdown = 5,
    // child -> host
    descriptor = 16, // fields: [encoded descriptor] (wire_descriptor.hpp), or code 1 and [why it did not load]
    result = 17,     // id, code: status; fields: [out] (a command: [out, err])
    host_call = 18,  // id, code: HostFunction; fields: its arguments
    log = 19,        // id (0: outside any call), code: level; fields: [message]
    progress = 20,   // id; fields: [done, total (8 bytes each), message]
    notify = 21,     // id (0: outside any call), code: GH_CHANGE_*; fields: [uri]
};

// What a call frame asks the child to run (FrameType::call's code).
enum class CallKind : std::int32_t {
    tool = 1,              // fields: [arguments]
    resource_read = 2,     // fields: [uri, variables]
    template_read = 3,     // fields: [uri, variables]
    template_complete = 4, // fields: [argument, value, context]
    prompt_get = 5,        // fields: [arguments]
    prompt_complete = 6,   // fields: [argument, value, context]
    page_show = 7,         // fields: [token, action]
    page_act = 8,          // fields: [token, action]
    critical_items = 9,    // fields: [owner]
    command = 10,          // fields: [context, args...]
};

// Whether a call of this kind has a gh_call, and so a round of a multi
// round-trip request: its frame ends with [input_responses, request_state].
constexpr bool carries_round(CallKind kind) {
    return kind != CallKind::critical_items && kind != CallKind::command;
}

// The host functions a child asks the host to run for a call (host_call's code).
enum class HostFunction : std::int32_t {
    call_context = 1,
    session_describe = 2, // [handle]
    session_open = 3,     // [topic]
    rules_accept = 4,     // [handle, code]
    critical_read = 5,    // [item ids]
    state_get = 6,        // [key]
    state_put = 7,        // [key, value, ttl_ms (8 bytes)]
    state_erase = 8,      // [key]
    state_take = 9,       // [key]
    store_credentials = 10,
};

struct Frame {
    FrameType type{};
    std::int32_t code = 0;
    std::uint32_t index = 0;
    std::uint64_t id = 0;
    std::vector<std::string> fields;

    // Field i, or empty when the frame has fewer: what a frame lacks reads
    // as nothing, never past its end.
    const std::string& field(std::size_t i) const;
    // Its length on the wire after the length word: what kMaxFrameBytes bounds.
    std::size_t length() const;
};

// A frame that breaks the bounds below, or a stream cut inside one.
struct BrokenChannel : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The bounds a frame is read within, so a child that writes garbage or
// without end is cut off, not believed: a frame is at most 64 MiB (a tool's
// answer included) in at most 4096 fields.
inline constexpr std::size_t kMaxFrameBytes = 64u << 20;
inline constexpr std::size_t kMaxFrameFields = 4096;

// One end of a framed stream between the host and a family's process:
// either one connected stream socket both ways, or two pipes, one each way
// (what the host and its child use: a pipe carries a small frame for less
// than a socket, whose every send builds a buffer of its own). send() may
// be called from any thread (a frame is written whole under a lock); the
// reading side (receive, read_some, next_buffered) from one reader at a
// time.
class FrameChannel {
public:
    // A connected stream socket, read and written.
    explicit FrameChannel(int socket);
    // Pipes: frames are read from `input` and written to `output`. Both are
    // made non-blocking: a reader waits in poll, a writer within its bound.
    // The process must ignore SIGPIPE (gatehouse's main does, and a family's
    // process), so a reader gone is an EPIPE, not the process's end.
    FrameChannel(int input, int output);
    // Reads of a pipe that block until there is something to read: one
    // system call a frame where a non-blocking read that finds nothing
    // waits in poll and reads again (three). For a reader with nothing else
    // to wait for, which a pipe's writer never wakes for nothing (a family's
    // process, reading what the host sends it).
    void block_on_reads();
    ~FrameChannel();
    FrameChannel(const FrameChannel&) = delete;
    FrameChannel& operator=(const FrameChannel&) = delete;

    // False when the other end is gone.
    bool send(const Frame& frame) {
        int error = 0;
        return send(frame, error);
    }
    // The same, with the errno of a failed send in `error` (EAGAIN: the
    // frame was not taken whole within bound_each_send's time).
    bool send(const Frame& frame, int& error);
    // Each frame from now on must be taken whole within `whole`, counted
    // from when its send begins: a reader that takes a little now and then
    // cannot hold a sender (a socket's send timeout restarts at each byte
    // taken). Unbounded by default.
    void bound_each_send(std::chrono::milliseconds whole) { send_bound_ = whole; }
    // The next frame; nothing at a clean end of stream (between frames).
    // Throws BrokenChannel on a frame beyond the bounds or cut short.
    std::optional<Frame> receive();
    // The reading in steps, for a reader that must not block past its own
    // deadline: read_some() makes one read of what the socket holds (false
    // at its end; it blocks only when nothing is there), next_buffered()
    // takes a whole frame out of what was read, if one is there.
    bool read_some();
    std::optional<Frame> next_buffered();
    // Bytes read that are not yet a whole frame: a stream that ends with
    // some is cut inside a frame.
    bool holds_partial() const { return in_end_ > in_start_; }
    // The host is done with the other end (it has ended, or is being
    // killed): sends from here on fail (EPIPE). A socket is shut both ways,
    // so a reader blocked on it returns; a pipe's reader is left to the
    // process's end, which whoever reads it watches (a pidfd), since a
    // program the other end started may hold the pipe's writing end.
    void shut_down();
    // What a reader polls for input; what a raw write goes to.
    int input_fd() const { return input_; }
    int output_fd() const { return output_; }

private:
    const int input_;
    int output_;        // -1 once shut down (pipes), under send_mutex_
    const bool socket_; // input_ and output_ are the one socket
    bool shut_ = false; // under send_mutex_
    std::optional<std::chrono::milliseconds> send_bound_;
    std::mutex send_mutex_;
    // What was read and not yet taken as frames: in_[in_start_, in_end_).
    // The buffer keeps its size, so a read costs no clearing of memory.
    std::vector<char> in_ = std::vector<char>(64 * 1024);
    std::size_t in_start_ = 0;
    std::size_t in_end_ = 0;
};

// An 8-byte field of a number, as progress and state_put carry them.
std::string number_field(double value);
std::string number_field(std::uint64_t value);
double field_double(std::string_view field);
std::uint64_t field_u64(std::string_view field);

} // namespace gatehouse::isolation
