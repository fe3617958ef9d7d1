#!/usr/bin/env bash
# No mutable process globals for per-host state in host/ or the shipped
# families: every variable at namespace scope, every mutable function-local
# static and every thread_local found is one docs/architecture.md lists
# (under "What is process-wide, and why"), or the test fails naming it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

# path:variable, each with its reason in docs/architecture.md.
allowed=(
    "host/plugins/host_api.cpp:g_hosts_mutex"
    "host/plugins/host_api.cpp:g_hosts"
    "host/crypto/openssl_loader.cpp:module"
    "host/crypto/openssl_loader.cpp:opening"
    "host/metrics/log_context.cpp:t_current_trace"
    "host/isolation/family_child.cpp:g_served_family"
    "host/protocol/request_pool.cpp:t_this_worker"
    "host/alloc/operator_new.cpp:t_small_blocks"
    "host/alloc/operator_new.cpp:g_thread_end_key"
    "host/alloc/operator_new.cpp:key_created"
    "host/alloc/operator_new.cpp:key_usable"
)

cd "$root"
# A declaration at column 0 (namespace scope: namespaces are not indented)
# that is neither const nor a type, function or alias; a mutable static
# inside a function; any thread_local.
at_namespace='^(?!(const|constexpr|using|typedef|class|struct|enum|union|namespace|template|friend|extern|return|inline constexpr|static const|static constexpr)\b)(static\s+|inline\s+)?[A-Za-z_][\w:<>,* ]*[\s*&]([a-z_]\w*)\s*(\{[^{}()]*\}|=[^;()]*)?;\s*$'
local_static='^\s+static\s+(?!(const|constexpr)\b)[\w:<>,* ]+[\s*&]([a-z_]\w*)\s*(\{[^()]*\}|=[^;()]*)?;\s*$'
names=$(grep -rnP --include='*.cpp' --include='*.hpp' "($at_namespace)|($local_static)|\bthread_local\b" host plugins |
    perl -ne 'if (/^([^:]+):\d+:(.*)$/) { my ($f, $l) = ($1, $2); $l =~ s/\s*(\{[^{}]*\}|=[^;]*)?;\s*$//; $l =~ /(\w+)\s*$/; print "$f:$1\n" }' |
    sort -u)

status=0
while IFS= read -r found; do
    [[ -z $found ]] && continue
    ok=false
    for a in "${allowed[@]}"; do [[ $found == "$a" ]] && ok=true; done
    if ! $ok; then
        echo "a mutable process global: $found (keep per-host state in serve::Host, or list it with its reason)" >&2
        status=1
    fi
done <<<"$names"
for a in "${allowed[@]}"; do
    grep -qx "$a" <<<"$names" || { echo "listed but gone: $a (take it off the list)" >&2; status=1; }
    grep -q "${a##*:}" docs/architecture.md || { echo "$a has no reason in docs/architecture.md" >&2; status=1; }
done
[[ $status == 0 ]] && echo "no mutable process globals beyond the ${#allowed[@]} listed"
exit $status
