#pragma once

#include "metrics/observability.hpp"
#include "protocol/json_rpc.hpp"

#include <string_view>

namespace gatehouse::protocol {

// How a tools/call ended, read from its answer: the outcome the metrics
// count, and for a refusal its code and `next`.
struct CallVerdict {
    metrics::CallOutcome outcome = metrics::CallOutcome::ok;
    std::string_view code;    // a refusal's (views into the answer)
    std::string_view message; // a protocol error's
    const Json* next = nullptr;
};

// `response`: the finished JSON-RPC answer (null: the call was cancelled
// and got none); `timed_out`: its deadline answered it.
CallVerdict call_verdict(const Json* response, bool timed_out);
// The same read from a CallToolResult itself (a task round's).
CallVerdict result_verdict(const Json& result, bool timed_out);

} // namespace gatehouse::protocol
