#!/usr/bin/env bash
# vendor_plugin_test.sh CMAKE BUILD_DIR EXAMPLE_DIR
#
# 1. cmake --install BUILD_DIR into a temporary prefix;
# 2. configure and build EXAMPLE_DIR as a separate project with
#    -DCMAKE_PREFIX_PATH=<prefix> (find_package(Gatehouse));
# 3. serve the built plugin with the INSTALLED gatehouse, once named by path
#    in the YAML and once installed into the host's plugin folder and named
#    bare, and call its tool over stdio in both protocol revisions.
set -euo pipefail

cmake=$1
build=$2
example=$3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failures=0

step() { printf '== %s\n' "$*"; }
fail() {
    printf 'FAIL: %s\n' "$*"
    failures=$((failures + 1))
}

step "install the host into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log"
test -x "$prefix/bin/gatehouse" || { cat "$tmp/install.log"; echo "FAIL: no $prefix/bin/gatehouse"; exit 1; }

step "build $example against the installed package"
if ! "$cmake" -S "$example" -B "$tmp/plugin-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1; then
    cat "$tmp/configure.log"
    echo "FAIL: the example does not configure against the installed package"
    exit 1
fi
if ! "$cmake" --build "$tmp/plugin-build" >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log"
    echo "FAIL: the example does not build against the installed headers"
    exit 1
fi
plugin=$tmp/plugin-build/vendor_echo.so
test -f "$plugin" || { echo "FAIL: no $plugin"; exit 1; }

meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'

# call_tool CONFIG LABEL: one 2026-07-28 call, then a 2025-11-25 handshake and
# call on a second connection; both answers must carry the echoed text.
call_tool() {
    local config=$1 label=$2 out
    out=$(printf '%s\n' \
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"vendor_echo\",\"arguments\":{\"text\":\"hello from a vendor\"},$meta}}" |
        timeout 30 "$prefix/bin/gatehouse" serve --config "$config" 2>"$tmp/serve.log") || true
    if ! grep '"id":1,' <<<"$out" | grep -qF '"structuredContent":{"text":"hello from a vendor"}'; then
        fail "$label: 2026-07-28 tools/call did not echo; got: $out"
        cat "$tmp/serve.log"
    elif grep -q '"isError":true' <<<"$out"; then
        fail "$label: 2026-07-28 tools/call answered with an error: $out"
    else
        echo "ok: $label, 2026-07-28 tools/call"
    fi

    out=$(printf '%s\n' \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"install-test","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vendor_echo","arguments":{"text":"legacy hello"}}}' |
        timeout 30 "$prefix/bin/gatehouse" serve --config "$config" 2>"$tmp/serve.log") || true
    if ! grep '"id":2,' <<<"$out" | grep -qF '"name":"vendor_echo"'; then
        fail "$label: tools/list does not name vendor_echo; got: $out"
    elif ! grep '"id":3,' <<<"$out" | grep -qF '"structuredContent":{"text":"legacy hello"}'; then
        fail "$label: 2025-11-25 tools/call did not echo; got: $out"
        cat "$tmp/serve.log"
    else
        echo "ok: $label, 2025-11-25 initialize + tools/list + tools/call"
    fi
}

step "serve the plugin named by its path in the YAML"
cat >"$tmp/by-path.yaml" <<YAML
log_level: warn
gate: false
plugins:
  - $plugin
YAML
call_tool "$tmp/by-path.yaml" "plugin named by path"

step "install the plugin into the host's plugin folder and name it bare"
"$cmake" --install "$tmp/plugin-build" >"$tmp/plugin-install.log"
test -f "$prefix/lib/gatehouse/plugins/vendor_echo.so" || fail "cmake --install did not put vendor_echo.so into $prefix/lib/gatehouse/plugins"
cat >"$tmp/bare.yaml" <<YAML
log_level: warn
gate: false
plugins:
  - vendor_echo.so
YAML
call_tool "$tmp/bare.yaml" "plugin named bare"

step "the installed host opens its OpenSSL module (a signature check needs it)"
test -f "$prefix/lib/gatehouse/gatehouse-openssl.so" || fail "cmake --install did not put gatehouse-openssl.so into $prefix/lib/gatehouse"
zeros32=$(head -c 32 /dev/zero | base64 -w0)
zeros64=$(head -c 64 /dev/zero | base64 -w0)
cat >"$tmp/license.yaml" <<YAML
log_level: warn
plugins: []
license:
  vendor_keys:
    k1: "$zeros32"
YAML
cat >"$tmp/license.json" <<JSON
{"format": "gatehouse-license-v1", "licensee": "Install Test", "families": ["vendor_echo"],
 "issued": "2026-01-01T00:00:00Z", "expires": "2099-01-01T00:00:00Z", "key_id": "k1", "signature": "$zeros64"}
JSON
verdict=$("$prefix/bin/gatehouse" license verify "$tmp/license.json" --config "$tmp/license.yaml" 2>&1) && status=0 || status=$?
if [[ $status -ne 0 && $verdict == *"signature does not match"* ]]; then
    echo "ok: a forged license is refused by the installed module"
else
    fail "license verify with the installed host (exit $status): $verdict"
fi

if ((failures > 0)); then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
