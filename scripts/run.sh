#!/usr/bin/env bash
# Installs what is missing, builds, and serves MCP over stdio on the embedded
# default configuration (config/gatehouse.yaml, compiled into the binary).
# Extra arguments go to `gatehouse serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DGATEHOUSE_BUILD_TESTS=OFF -DGATEHOUSE_BUILD_BENCH=OFF
exec build/bin/gatehouse serve "$@"
