#!/usr/bin/env bash
# One instance on SQLite, one on Redis, and three on Redis behind nginx
# (scripts/cluster.sh), in one run with one client, after the topology's
# floor (the cluster's nginx in front of three nginx workers answering a fixed
# result, so no host and no Redis): wrk at 64 connections
# sending gated tools/call requests (the echo test family's no-op tool, with
# an open session: the gate's every check runs). For each: requests/s, p50,
# p99, errors, gatehouse CPU per call (every instance's utime+stime from
# /proc), and for Redis the commands it ran per call (INFO commandstats).
# Usage: bench/run_cluster_bench.sh [BUILD_DIR] [SECONDS]
# Needs wrk, nginx and redis-server (scripts/install-deps.sh) and a build with
# the test plugins (GATEHOUSE_BUILD_TESTS=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build}")
seconds=${2:-10}
connections=${CONNECTIONS:-64}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[[ -x $build/bin/gatehouse && -f $build/tests/plugins/echo.so ]] ||
  { echo "$build has no gatehouse with the test plugins (build with -DGATEHOUSE_BUILD_TESTS=ON)" >&2; exit 1; }

work=$(mktemp -d)
export GATEHOUSE_CLUSTER_DIR=$work/cluster
cleanup() {
  [[ $(type -t stop_floor) == function ]] && stop_floor
  scripts/cluster.sh down >/dev/null 2>&1 || true
  kill $(jobs -p) 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The cluster: three instances on one Redis, nginx in front; the echo family
# beside the session family, license-free like them.
export GATEHOUSE_BIN=$build/bin/gatehouse GATEHOUSE_PLUGIN_DIR=$build/lib/gatehouse/plugins
export GATEHOUSE_CLUSTER_PLUGINS="session.so $build/tests/plugins/echo.so"
export GATEHOUSE_CLUSTER_FREE_FAMILIES="session echo"
nginx_url=$(scripts/cluster.sh up 3 2>"$work/cluster-up.log" | tail -1)
gh1_url="http://127.0.0.1:$(cat "$GATEHOUSE_CLUSTER_DIR/gh-1/port")/mcp"

# The single SQLite instance: gh-1's YAML with the SQLite backend.
mkdir -p "$work/sqlite/data"
sed -e "s|data_dir: .*|data_dir: \"$work/sqlite/data\"|" \
    -e '/^  redis:/,/^    key_prefix/d' -e 's/^  backend: redis/  backend: sqlite/' \
    -e 's/instance_name: gh-1/instance_name: sqlite/' \
  "$GATEHOUSE_CLUSTER_DIR/gh-1/gatehouse.yaml" >"$work/sqlite/gatehouse.yaml"
"$build/bin/gatehouse" serve --config "$work/sqlite/gatehouse.yaml" --transport http --listen 127.0.0.1:18790 \
  2>"$work/sqlite/gatehouse.log" &
sqlite_pid=$!
sqlite_url=http://127.0.0.1:18790/mcp
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18790/health && break; sleep 0.1; done

# The floor of the topology: the cluster's own nginx configuration, the same
# file with only its upstreams and paths changed, in front of three nginx
# workers that answer every POST with one fixed tools/call result. What the
# cluster spends above this row is the hosts' and Redis's.
floor_backend_ports=(18791 18792 18793)
floor_front_port=18794
for k in 0 1 2; do
  mkdir -p "$work/floor/b$k"
  cat >"$work/floor/b$k/nginx.conf" <<CONF
worker_processes 1;
pid $work/floor/b$k/nginx.pid;
error_log $work/floor/b$k/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/floor/b$k/body;
  keepalive_requests 100000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:${floor_backend_ports[$k]};
    location / {
      default_type application/json;
      return 200 '{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}';
    }
  }
}
CONF
  nginx -p "$work/floor/b$k" -c "$work/floor/b$k/nginx.conf" -e "$work/floor/b$k/error.log"
done
mkdir -p "$work/floor/front"
awk -v ports="${floor_backend_ports[*]}" -v front="$floor_front_port" '
  BEGIN { n = split(ports, p, " ") }
  /^ *server 127\.0\.0\.1:[0-9]+ / { if (!done) for (i = 1; i <= n; i++) print "    server 127.0.0.1:" p[i] " max_fails=1 fail_timeout=5s;"; done = 1; next }
  /^ *listen 127\.0\.0\.1:/ { print "    listen 127.0.0.1:" front ";"; next }
  { print }' "$GATEHOUSE_CLUSTER_DIR/nginx/nginx.conf" |
  sed "s|$GATEHOUSE_CLUSTER_DIR/nginx|$work/floor/front|g" >"$work/floor/front/nginx.conf"
mkdir -p "$work/floor/front/temp"
nginx -p "$work/floor/front" -c "$work/floor/front/nginx.conf" -e "$work/floor/front/error.log"
floor_url=http://127.0.0.1:$floor_front_port/mcp
floor_pids() { local k; for k in 0 1 2; do cat "$work/floor/b$k/nginx.pid"; echo; pgrep -P "$(cat "$work/floor/b$k/nginx.pid")"; done | tr '\n' ' '; }
floor_front_pids() { local m; m=$(cat "$work/floor/front/nginx.pid"); echo "$m $(pgrep -P "$m" | tr '\n' ' ')"; }
stop_floor() {
  local conf
  for conf in "$work"/floor/*/nginx.conf; do nginx -p "$(dirname "$conf")" -c "$conf" -s stop 2>/dev/null || true; done
}

# A session on a target: its handle (2026-07-28 session_connect).
open_session() {
  curl -s "$1" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: session_connect' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session_connect","arguments":{"topic":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}' |
    sed -n 's/.*"session":"\([0-9a-f]\{32\}\)".*/\1/p' | head -1
}

cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
ticks_per_s=$(getconf CLK_TCK)
redis_calls() {
  redis-cli -s "$GATEHOUSE_CLUSTER_DIR/redis/redis.sock" INFO commandstats |
    awk -F'[=,:]' '/^cmdstat_/ && $1 !~ /cmdstat_(info|ping)$/ {n += $3} END {print n + 0}'
}
redis_pid=$(cat "$GATEHOUSE_CLUSTER_DIR/redis/redis.pid")
nginx_master=$(cat "$GATEHOUSE_CLUSTER_DIR/nginx/nginx.pid")
nginx_pids="$nginx_master $(pgrep -P "$nginx_master" | tr '\n' ' ')"
cluster_pids=$(for k in 1 2 3; do cat "$GATEHOUSE_CLUSTER_DIR/gh-$k/gatehouse.pid"; echo; done | tr '\n' ' ')

printf '| setup | connections | requests/s | p50 ms | p99 ms | errors | gatehouse CPU µs/call | Redis commands/call | Redis CPU µs/call | nginx CPU µs/call |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
run() { # run NAME URL "GATEHOUSE PIDS" USES_REDIS USES_NGINX [SESSION]
  local name=$1 url=$2 pids=$3 redis=$4 nginx=$5 session=${6:-}
  [[ -n $session ]] || session=$(open_session "$url")
  [[ -n $session ]] || { echo "no session opened on $url" >&2; exit 1; }
  export GATEHOUSE_BENCH_SESSION=$session
  wrk -t1 -c "$connections" -d 2s -s bench/gated_call.lua "$url" >/dev/null # warm-up
  local before after rb ra cb ca nb na line
  before=$(cpu_ticks $pids)
  rb=$(redis_calls); cb=$(cpu_ticks "$redis_pid"); nb=$(cpu_ticks $front_pids)
  line=$(wrk -t1 -c "$connections" -d "${seconds}s" --timeout 10s -s bench/gated_call.lua "$url" | grep '^RESULT')
  after=$(cpu_ticks $pids)
  ra=$(redis_calls); ca=$(cpu_ticks "$redis_pid"); na=$(cpu_ticks $front_pids)
  eval "$(echo "$line" | sed 's/^RESULT //')"
  awk -v name="$name" -v c="$connections" -v n="$requests" -v us="$duration_us" -v e="$errors" -v p50="$p50_us" \
      -v p99="$p99_us" -v cpu=$((after - before)) -v hz="$ticks_per_s" -v rc=$((ra - rb)) -v rcpu=$((ca - cb)) \
      -v ncpu=$((na - nb)) -v redis="$redis" -v nginx="$nginx" 'BEGIN {
    printf "| %s | %d | %.0f | %.2f | %.2f | %d | %.1f | %s | %s | %s |\n", name, c, n / (us / 1e6), p50 / 1000,
      p99 / 1000, e, cpu / hz * 1e6 / n, redis ? sprintf("%.2f", rc / n) : "—",
      redis ? sprintf("%.1f", rcpu / hz * 1e6 / n) : "—", nginx ? sprintf("%.1f", ncpu / hz * 1e6 / n) : "—" }'
}
# The floor's backends answer without a gate: any handle will do. Its
# "gatehouse CPU" column is the three backends' nginx.
front_pids=$(floor_front_pids)
run "floor: nginx in front of three fixed answers" "$floor_url" "$(floor_pids)" 0 1 0123456789abcdef0123456789abcdef
stop_floor
front_pids=$nginx_pids
run "one instance, SQLite" "$sqlite_url" "$sqlite_pid" 0 0
run "one instance, Redis" "$gh1_url" "$(cat "$GATEHOUSE_CLUSTER_DIR/gh-1/gatehouse.pid")" 1 0
run "three instances, Redis, nginx" "$nginx_url" "$cluster_pids" 1 1
