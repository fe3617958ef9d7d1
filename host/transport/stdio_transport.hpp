#pragma once

#include "protocol/mcp_server.hpp"
#include "protocol/request_pool.hpp"
#include "transport/stop_signal.hpp"

#include <cstddef>

namespace gatehouse::transport {

// Newline-delimited JSON-RPC over the process's stdin and stdout.
// stdout is taken over at start: the real stdout moves to a private
// descriptor and fd 1 points at stderr, so a plugin's stray printf can never
// corrupt the protocol stream.
class StdioTransport {
public:
    // The pool also runs the reading: give it one worker more than calls may
    // use (limits.workers + 1), so stdio reads as the dedicated thread did.
    StdioTransport(protocol::McpServer& server, protocol::RequestPool& pool, std::size_t max_message_bytes);

    // Reads until end of input or a stop request, then gives calls still
    // running a short grace (none after a stop request), cancels the rest and
    // returns. The caller stops the worker pool.
    int run(StopSignal& stop);

private:
    protocol::McpServer& server_;
    protocol::RequestPool& pool_;
    std::size_t max_message_bytes_;
};

} // namespace gatehouse::transport
