-- wrk script for bench/run_cluster_bench.sh: every request is a 2026-07-28
-- tools/call of the echo family's no-op tool through the whole gate, with
-- the session handle the runner opened (GATEHOUSE_BENCH_SESSION).
local session = os.getenv("GATEHOUSE_BENCH_SESSION")
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop","arguments":{"session":"' ..
  session .. '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "noop"

-- A refusal is a 200 with isError: count those as errors too.
local refused = 0
response = function(status, headers, body)
  if body and string.find(body, '"isError":true', 1, true) then refused = refused + 1 end
end

done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status +
    summary.errors.timeout
  io.write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, errors, summary.errors.status,
    latency:percentile(50), latency:percentile(99)))
end
