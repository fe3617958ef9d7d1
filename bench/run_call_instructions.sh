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
# Environment: CALLS (2000), TOP (25).
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
    mkdir -p "$work/$name/tests/plugins"
    objcopy --strip-debug "$dir/bin/gatehouse" "$work/$name/gatehouse"
    objcopy --strip-debug "$dir/tests/plugins/echo.so" "$work/$name/tests/plugins/echo.so"
    stdio_bench_yaml "$work/$name" >"$work/$name/bench.yaml"
}

# count NAME ERA N: the host's instructions over a run of N calls.
count() {
    local name=$1 era=$2 n=$3 out="$work/$1.$2.$3"
    "$build/bin/stdio_load" --calls "$n" --in-flight 32 --warmup 10 --cold-runs 0 --era "$era" \
        --concurrent-only -- valgrind --tool=callgrind --callgrind-out-file="$out" -q \
        "$work/$name/gatehouse" serve --config "$work/$name/bench.yaml" >/dev/null
    echo "$out"
}

report() {
    local name=$1 era=$2 small large
    small=$(count "$name" "$era" "$calls")
    large=$(count "$name" "$era" $((3 * calls)))
    python3 "$here/callgrind_per_call.py" "$small" "$large" $((2 * calls)) "$top" "$name ($era)"
}

prepare current "$build"
[[ -z $baseline ]] || prepare baseline "$baseline"
for era in modern legacy; do
    [[ -z $baseline ]] || report baseline "$era"
    report current "$era"
done
