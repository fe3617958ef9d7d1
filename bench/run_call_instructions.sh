#!/usr/bin/env bash
# run_call_instructions.sh [BUILD_DIR] [BASELINE_BUILD_DIR]
#
# Instructions a tools/call costs the host over stdio, counted by Valgrind's
# callgrind: the same noop call of the echo test family as
# run_stdio_bench.sh, 32 in flight, in each era. A count does not move with
# the machine's other guests, so two builds compare in one run where the
# timings of a shared 2-core guest move more than a change is worth; it says
# nothing about system calls, sleeps and wake-ups, which the timed benches
# measure.
#
# The host runs twice per era, once with CALLS and once with 3 x CALLS
# calls; the difference over 2 x CALLS is per call, so start-up drops out.
# With BASELINE_BUILD_DIR (a build of another revision, e.g. the one
# bench/baseline.sh makes), that host is counted beside this one.
# TOP (default 25) functions are listed per build and era by their own
# instructions per call, as the difference of the two runs.
#
# With HTTP=1 it also counts a request over Streamable HTTP (the wrk load of
# run_http_bench.sh, 16 connections): a 5 s and a 15 s run, the difference
# over the difference in requests answered (a rate, not an exact count:
# the host's timers tick beside the requests; needs wrk).
#
# With UPSTREAM=1 it also counts a call relayed to an upstream: the host
# under callgrind mounts, over stdio, a host of the same build (not counted)
# serving the echo family, as run_upstream_bench.sh does, and the agent
# calls its `up_noop` (IN_FLIGHT at once, default 32; 1 counts the
# sequential path, where the call runs on the stdin reader).
#
# Environment: CALLS (2000), TOP (25), HTTP (0), HTTP_PORT (18099),
# UPSTREAM (0), IN_FLIGHT (32, for UPSTREAM), STDIO (1; 0 skips the direct
# stdio counts).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(realpath -m "${1:-$root/build}")
baseline=${2:+$(realpath -m "$2")}
calls=${CALLS:-2000}
top=${TOP:-25}

command -v valgrind >/dev/null || {
    echo "valgrind is needed (apt-get install valgrind)" >&2
    exit 1
}
cmake --build "$build" -j2 --target gatehouse echo stdio_load >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/bench_configs.sh"

# Valgrind 3.19 cannot read the DWARF 5 a current clang writes, so each
# host and its plugin are counted from copies without debug information
# (symbol names stay).
prepare() {
    local name=$1 dir=$2
    mkdir -p "$work/$name/tests/plugins" "$work/$name/data"
    objcopy --strip-debug "$dir/bin/gatehouse" "$work/$name/gatehouse"
    objcopy --strip-debug "$dir/tests/plugins/echo.so" "$work/$name/tests/plugins/echo.so"
    stdio_bench_yaml "$work/$name" >"$work/$name/bench.yaml"
    http_bench_yaml "${HTTP_PORT:-18099}" "$work/$name/tests/plugins" "$work/$name/data" >"$work/$name/http.yaml"
    # The upstream is the build's own host, run natively: only the mounting host is counted.
    cat >"$work/$name/upstream.yaml" <<YAML
log_level: warn
gate: false
upstreams:
  - name: up
    command: ["$dir/bin/gatehouse", serve, --config, "$work/$name/bench.yaml"]
    max_in_flight: ${IN_FLIGHT:-32}
YAML
}

# count NAME ERA N [CONFIG TOOL IN_FLIGHT]: the host's instructions over a run of N calls.
count() {
    local name=$1 era=$2 n=$3 config=${4:-bench} tool=${5:-noop} in_flight=${6:-32}
    local out="$work/$1.$2.$3.$config"
    "$build/bin/stdio_load" --calls "$n" --in-flight "$in_flight" --warmup 10 --cold-runs 0 --era "$era" \
        --tool "$tool" --concurrent-only -- valgrind --tool=callgrind --callgrind-out-file="$out" -q \
        "$work/$name/gatehouse" serve --config "$work/$name/$config.yaml" >/dev/null
    echo "$out"
}

# report NAME ERA [CONFIG TOOL IN_FLIGHT LABEL]
report() {
    local name=$1 era=$2 small large
    small=$(count "$name" "$era" "$calls" "${@:3:3}")
    large=$(count "$name" "$era" $((3 * calls)) "${@:3:3}")
    python3 "$here/callgrind_per_call.py" "$small" "$large" $((2 * calls)) "$top" "$name ($era${6:+, $6})"
}

# count_http NAME SECONDS: the host's instructions over SECONDS of wrk, and
# the requests answered, as "INSTRUCTIONS REQUESTS".
count_http() {
    local name=$1 seconds=$2 out="$work/$1.http.$2" port=${HTTP_PORT:-18099} pid requests
    valgrind --tool=callgrind --callgrind-out-file="$out" -q "$work/$name/gatehouse" serve \
        --config "$work/$name/http.yaml" 2>>"$work/$name/http.log" &
    pid=$!
    for _ in $(seq 150); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/health" && break
        sleep 0.2
    done
    requests=$(wrk -t1 -c16 -d"${seconds}s" -s "$here/http_noop.lua" "http://127.0.0.1:$port/mcp" |
        sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p')
    kill -TERM "$pid"
    wait "$pid" || true
    echo "$out $requests"
}

report_http() {
    local name=$1 small large
    read -r small small_requests < <(count_http "$name" 5)
    read -r large large_requests < <(count_http "$name" 15)
    python3 "$here/callgrind_per_call.py" "$small" "$large" $((large_requests - small_requests)) "$top" \
        "$name (HTTP, per request)"
}

prepare current "$build"
[[ -z $baseline ]] || prepare baseline "$baseline"
if [[ ${STDIO:-1} == 1 ]]; then
    for era in modern legacy; do
        [[ -z $baseline ]] || report baseline "$era"
        report current "$era"
    done
fi
if [[ ${UPSTREAM:-0} == 1 ]]; then
    relayed=(upstream up_noop "${IN_FLIGHT:-32}" "through an upstream, ${IN_FLIGHT:-32} in flight")
    [[ -z $baseline ]] || report baseline modern "${relayed[@]}"
    report current modern "${relayed[@]}"
fi
if [[ ${HTTP:-0} == 1 ]]; then
    command -v wrk >/dev/null || {
        echo "HTTP=1 needs wrk (apt-get install wrk)" >&2
        exit 1
    }
    [[ -z $baseline ]] || report_http baseline
    report_http current
fi
