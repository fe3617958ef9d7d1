#!/usr/bin/env bash
# Writes host/function_order.txt and each shipped plugin's
# function_order.txt: the functions of the host and of each plugin that a
# start (on the embedded default configuration and on the shipped file) and
# a few calls of each era run, the start's first. A release build linked
# with lld places them first in its text
# (cmake/FunctionOrder.cmake), so the pages a serving host touches are few
# and together: every page first touched costs a fault, and each fault maps
# its neighbours too (docs/performance.md, "What a page first touched costs
# here"). Run it again after large changes; a name no longer in the binary is
# ignored, a new function is placed after the listed ones.
# Usage: scripts/order-functions.sh [BUILD_DIR]   (a release build; needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }
[[ -x $build/bin/gatehouse ]] || { echo "no $build/bin/gatehouse: build it first (scripts/build.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy without debug sections (valgrind reads the symbols; some DWARF it
# cannot), laid out as the build is, so the embedded configuration finds the
# plugins beside the binary.
mkdir -p "$work/bin" "$work/lib/gatehouse/plugins" "$work/data"
objcopy --strip-debug "$build/bin/gatehouse" "$work/bin/gatehouse"
for plugin in "$build"/lib/gatehouse/plugins/*.so; do
  objcopy --strip-debug "$plugin" "$work/lib/gatehouse/plugins/$(basename "$plugin")"
done

# Each era's listing and calls of the shipped tools; refusals included, as
# an agent meets them first.
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"order","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
# A start and its first listing, what a host that waits for work has run.
start() {
  echo '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{'"$meta"'}}'
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{'"$meta"'}}'
}
requests() {
  start
  echo '{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{'"$meta"'}}'
  echo '{"jsonrpc":"2.0","id":4,"method":"prompts/list","params":{'"$meta"'}}'
  local id=10
  for tool in session_init list_domains session_connect remember recall forget describe_tool; do
    echo '{"jsonrpc":"2.0","id":'$id',"method":"tools/call","params":{"name":"'$tool'","arguments":{},'"$meta"'}}'
    id=$((id + 1))
  done
}
legacy() {
  echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"order","version":"1"}}}'
  echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
  echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_init","arguments":{}}}'
  echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"recall","arguments":{"query":"x"}}}'
}

run() { # NAME INPUT-FUNCTION [SERVE-ARGUMENTS...]
  local name=$1 input=$2
  shift 2
  "$input" | GATEHOUSE_DATA_DIR="$work/data" valgrind --tool=callgrind --demangle=no --dump-instr=no \
    --callgrind-out-file="$work/$name.out" "$work/bin/gatehouse" serve "$@" >/dev/null 2>"$work/$name.log"
}
# A start on the embedded configuration (scripts/run.sh) and on the shipped
# file (the benches), then the calls.
run start start
run start-file start --config config/gatehouse.yaml
run modern requests
run legacy legacy

# The functions each object ran (callgrind's file writes names and objects
# in full once, then by number: "fn=(12)"), into the list its build reads.
python3 - "$work" "$work/start.out" "$work/start-file.out" "$work/modern.out" "$work/legacy.out" <<'PY'
import re, sys
work, files = sys.argv[1], sys.argv[2:]
starts = files[:2]
lists = {
    f"{work}/bin/gatehouse": "host/function_order.txt",
    f"{work}/lib/gatehouse/plugins/session.so": "plugins/session/function_order.txt",
    f"{work}/lib/gatehouse/plugins/sessions.so": "plugins/sessions-bot/function_order.txt",
    f"{work}/lib/gatehouse/plugins/memory.so": "plugins/memory/function_order.txt",
}
ran = {binary: [] for binary in lists}
started = {binary: set() for binary in lists}
for path in files:
    names = {"ob": {}, "fn": {}}
    ob = None
    for line in open(path, errors="replace"):
        m = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        called, kind, number, name = m.groups()
        if name is not None:
            names[kind][number] = name
        if called:
            continue
        if kind == "ob":
            ob = names["ob"].get(number)
        elif ob in ran:
            # What callgrind calls "(below main)" in the binary is the start
            # files' code: _start (crt1.o) and, run from .init_array,
            # frame_dummy (crtbegin.o), each the one text section of its file.
            name = names["fn"].get(number)
            functions = ["_start", "frame_dummy"] if name == "(below main)" else [name]
            ran[ob].extend(functions)
            if path in starts:
                started[ob].update(functions)
for binary, out in lists.items():
    done = []
    for name in ran[binary]:
        if name and not name.startswith("0x") and name not in done:
            done.append(name)
    if binary.endswith("/bin/gatehouse") and len(done) < 100:
        sys.exit(f"the host ran only {len(done)} functions of its own: did it start? (a release build of this tree)")
    # What the start ran first, then what only the calls ran: a host waiting
    # for work has touched the first run's pages only (its idle RSS). Each
    # part sorted: where a function sits inside its part matters little, and
    # a list written again differs only by what changed.
    first = sorted(n for n in done if n in started[binary])
    then = sorted(n for n in done if n not in started[binary])
    with open(out, "w") as f:
        f.writelines(name + "\n" for name in first + then)
    print(f"{out}: {len(first)} functions of the start, {len(then)} more of the calls", file=sys.stderr)
PY
