#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against the real gatehouse binary serving the
# conformance fixture family over Streamable HTTP, for one protocol revision.
# Failures must be listed in expected-failures-<revision>.yaml; an unlisted
# failure fails the run, and so does a listed one that now passes (the list
# may only shrink).
# Usage: tests/conformance/run_conformance.sh BUILD_DIR REVISION
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
revision=$2
node=${GATEHOUSE_NODE:-node}
[[ -d $here/node_modules/@modelcontextprotocol/conformance ]] || (cd "$here" && npm ci --silent --no-audit --no-fund)

work=$(mktemp -d)
host_pid=
cleanup() {
  [[ -n $host_pid ]] && kill "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/conformance.yaml" <<YAML
plugin_dir: $build/tests/plugins
data_dir: $work/data
gate: false
plugins: [conformance.so]
transports: [http]
http: {listen: "127.0.0.1:0"}
YAML
"$build/bin/gatehouse" serve --config "$work/conformance.yaml" 2>"$work/host.log" &
host_pid=$!
url=
for _ in $(seq 200); do
  url=$(grep -o 'serving MCP over HTTP at http://[^ ]*' "$work/host.log" | awk '{print $NF}' || true)
  [[ -n $url ]] && break
  kill -0 "$host_pid" 2>/dev/null || break
  sleep 0.05
done
if [[ -z $url ]]; then
  echo "gatehouse did not start serving HTTP; its log:" >&2
  cat "$work/host.log" >&2
  exit 1
fi

status=0
"$node" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$url" \
  --requirements "$revision" --expected-failures "$here/expected-failures-$revision.yaml" || status=$?
if ((status != 0)); then
  echo "--- gatehouse log ---" >&2
  tail -n 50 "$work/host.log" >&2
fi
exit "$status"
