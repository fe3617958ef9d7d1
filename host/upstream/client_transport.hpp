#pragma once

#include "protocol/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gatehouse::upstream {

// One connection to an upstream MCP server, as the client session sees it:
// JSON-RPC messages out, JSON-RPC messages in. Each kind (a command over
// stdio, a URL over Streamable HTTP) frames and bounds them its own way.
class ClientTransport {
public:
    // The data of an error the transport answers a request with itself (an
    // HTTP status past 2xx, no token to send): the family tells the agent
    // the server is unavailable, not that it refused the request.
    static constexpr const char* kRefusedHere = "gatehouse/transport";
    static bool refused_here(const nlohmann::json& error_data) {
        return error_data.is_object() && error_data.contains(kRefusedHere);
    }

    struct Events {
        // One whole message, at most the transport's bound in bytes, not yet
        // parsed. `stream_of` is the id of the host's request whose answer
        // stream carried it (Streamable HTTP), false for the server's own
        // stream (outside any request), null where the transport cannot tell
        // (stdio): what a server asks during a call is matched by it. True
        // when it was the answer to the request `stream_of` names: nothing
        // after it on that stream is awaited.
        std::function<bool(std::string_view message, const nlohmann::json& stream_of)> message;
        // The connection ended (called once, after the last message), and why.
        std::function<void(const std::string& why)> closed;
    };

    virtual ~ClientTransport() = default;
    // Starts delivering what arrives to `events` (from a thread of the transport's own).
    virtual void start(Events events) = 0;
    // Reads on the calling thread while no other thread does, delivering
    // what arrives as start()'s events do (what another request waits for
    // too), until `enough()` or `patience` has passed: a request whose
    // caller reads its own answer costs no thread hand-off. False at once
    // when another thread reads, or the transport has no such reading (the
    // caller then waits for what that thread delivers). `alone`: no other
    // request waits, so taking the reading over from the transport's own
    // thread is worth waking it.
    virtual bool read_here(std::chrono::milliseconds patience, const std::function<bool()>& enough, bool alone) {
        (void)patience, (void)enough, (void)alone;
        return false;
    }
    // Requests still wait after read_here's caller has its answer: the
    // transport's own thread reads on at once.
    virtual void read_on() {}
    // Sends one message. False when the connection has ended.
    virtual bool send(const nlohmann::json& message) = 0;
    // Sends one message the session wrote as compact JSON itself (a request
    // on a call's path, built without a tree of its own). A transport that
    // frames text as it is takes it so; one that reads a message's parts
    // (an HTTP POST routes by them) reads it back for send().
    virtual bool send_written(std::string message);
    // The session waits no longer for request `id`'s answer (it timed out,
    // was cancelled or abandoned): a transport that reads each request's
    // answer on its own (an HTTP POST) stops reading it, so a server that
    // keeps that answer coming slowly holds no thread and no socket.
    virtual void give_up(std::int64_t id) { (void)id; }
    // The revision the session settled on (over HTTP it rides in a header).
    virtual void negotiated(const std::string& protocol_version) { (void)protocol_version; }
    // Ends the connection; `closed` has been called when it returns.
    virtual void close() = 0;
    // What it reaches, for the log and `gatehouse plugins`: the command or the URL.
    virtual std::string describe() const = 0;
};

inline bool ClientTransport::send_written(std::string message) {
    return send(protocol::parse_bounded(message).value);
}

} // namespace gatehouse::upstream
