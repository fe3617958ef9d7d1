#!/usr/bin/env bash
# Where a tools/call's time goes in the host, by perf sampling (cpu-clock:
# this guest has no hardware counters), on both paths the speed benches run:
#
#   stdio: `stdio_load` driving `gatehouse serve` on the echo family's noop,
#          sequentially and with 32 calls in flight (2026-07-28);
#   HTTP:  wrk with bench/http_noop.lua at 64 connections against
#          `gatehouse serve` on loopback (`http.threads: 2`).
#
# Prints, per run, the host's samples by shared object and its hottest
# symbols (self time, call graphs folded away), so the figures can go in
# docs/performance.md. perf.data files stay in BUILD_DIR/bench/profile/ for
# `perf report -i ...`.
#
#   bench/run_profile.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build}")
seconds=${2:-8}
command -v perf >/dev/null || { echo "perf is missing: apt-get install linux-perf" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGATEHOUSE_BUILD_BENCH=ON >&2
fi
cmake --build "$build" -j2 --target gatehouse echo stdio_load >&2

out=$build/bench/profile
mkdir -p "$out"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# Template arguments folded away and padding trimmed, so a line fits a page.
tidy() {
  sed -E -e 's/[[:space:]]+$//' -e 's/nlohmann::json_abi_v3_11_2::/nlohmann::/g' \
    -e ':a' -e 's/<[^<>]*>//g' -e 'ta' -e 's/[[:space:]]+-[[:space:]]+-$//' | grep -v '^#' | grep -v '^$'
}

# What one run's host spent, as shares of the host's own samples (the load
# generator's are left out): by object, then its hottest symbols (self time).
summary() { # summary TITLE PERF_DATA COMM
  local title=$1 data=$2 comm=$3
  printf '\n### %s\n\n```\n' "$title"
  for sort in comm,dso comm,dso,symbol; do
    perf report -i "$data" --no-children -g none --sort "$sort" --stdio 2>/dev/null | tidy |
      awk -v comm="$comm" '$2 == comm { sub(/%/, "", $1); share[NR] = $1; $1 = ""; $2 = ""; line[NR] = $0; total += share[NR] }
        END { for (i = 1; i <= NR; i++) if (i in share && share[i] / total >= 0.008)
                printf "%6.1f%%  %s\n", 100 * share[i] / total, substr(line[i], 3) }' | head -32
    echo
  done
  printf '```\n'
}

source bench/bench_configs.sh
stdio_bench_yaml "$build" >"$work/stdio.yaml"
for in_flight in 1 32; do
  data=$out/stdio-$in_flight.perf.data
  echo "profiling stdio, $in_flight in flight" >&2
  perf record -e cpu-clock -F 4999 -g -o "$data" -- "$build/bin/stdio_load" --calls $((seconds * 12000)) \
    --in-flight "$in_flight" --warmup 2000 --cold-runs 0 --era modern -- \
    "$build/bin/gatehouse" serve --config "$work/stdio.yaml" >/dev/null 2>"$work/stdio-$in_flight.log"
  summary "stdio, $in_flight in flight (\`stdio_load\`, 2026-07-28)" "$data" gatehouse
done

http_bench_yaml 18775 "$build/tests/plugins" "$work/data" >"$work/http.yaml"
"$build/bin/gatehouse" serve --config "$work/http.yaml" 2>"$work/http.log" &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18775/ && break; sleep 0.1; done
url=http://127.0.0.1:18775/mcp
wrk -t1 -c 64 -d 2s -s bench/http_noop.lua "$url" >/dev/null
echo "profiling HTTP, 64 connections" >&2
data=$out/http-64.perf.data
wrk -t1 -c 64 -d "$((seconds + 2))s" -s bench/http_noop.lua "$url" >"$work/wrk.out" &
load=$!
sleep 1
perf record -e cpu-clock -F 4999 -g -p "$server" -o "$data" -- sleep "$seconds" 2>/dev/null
wait "$load"
summary "HTTP, 64 connections (wrk, 2026-07-28, \`http.threads: 2\`)" "$data" gatehouse
