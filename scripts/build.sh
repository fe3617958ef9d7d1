#!/usr/bin/env bash
# Configures and builds Gatehouse into build/ (or $GATEHOUSE_BUILD_DIR).
# Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GATEHOUSE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >&2
cmake --build "$build" -j "$(nproc)" >&2
