#pragma once

#include "protocol/mcp_server.hpp"
#include "transport/stop_signal.hpp"

#include <cstddef>

namespace gatehouse::transport {

// Newline-delimited JSON-RPC over the process's stdin and stdout.
// stdout is taken over at start: the real stdout moves to a private
// descriptor and fd 1 points at stderr, so a plugin's stray printf can never
// corrupt the protocol stream.
class StdioTransport {
public:
    StdioTransport(protocol::McpServer& server, std::size_t max_message_bytes);

    // Reads until end of input or a stop request, then gives calls still
    // running a short grace (none after a stop request), cancels the rest and
    // returns. The caller stops the worker pool.
    int run(StopSignal& stop);

private:
    protocol::McpServer& server_;
    std::size_t max_message_bytes_;
};

} // namespace gatehouse::transport
