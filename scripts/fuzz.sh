#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) into
# build-fuzz/ (or $GATEHOUSE_FUZZ_BUILD_DIR) and runs each for SECONDS (default 300), starting from the
# committed seed corpus. New inputs go to <build>/fuzz-work/<target>/, never
# into the repository; a crash leaves its reproducer there and fails the run.
# A target written TARGET:RUNS stops after RUNS inputs (SECONDS still caps it):
# with GATEHOUSE_FUZZ_SEED fixed and an empty work folder, that run is the same
# every time, so what passes here passes in CI.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET[:RUNS]...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(mcp_message json_text config tool_descriptor resource_descriptor json_schema http_headers request_state)
build=${GATEHOUSE_FUZZ_BUILD_DIR:-build-fuzz}
work=$build/fuzz-work

# A build folder already configured for fuzzing keeps its options: the test
# build (scripts/test.sh) is one, and fuzzing there compiles nothing twice.
if ! grep -qs '^GATEHOUSE_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DGATEHOUSE_FUZZ=ON -DGATEHOUSE_BUILD_TESTS=OFF -DGATEHOUSE_BUILD_BENCH=OFF >&2
fi
cmake --build "$build" -j "$(nproc)" --target fuzz_targets >&2

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for spec in "${targets[@]}"; do
  target=${spec%%:*}
  runs=-1
  [[ $spec == *:* ]] && runs=${spec#*:}
  mkdir -p "$work/$target"
  log=$work/$target.log
  if ((runs >= 0)); then
    echo "fuzzing $target for $runs inputs (at most ${seconds}s)" >&2
  else
    echo "fuzzing $target for ${seconds}s" >&2
  fi
  # -timeout: one input running 10 s is a hang worth a report; the MCP target
  # needs inputs larger than its 4 KiB message limit to reach the refusal.
  # GATEHOUSE_FUZZ_SEED fixes the random sequence (CI sets it, so a red run
  # can be replayed); unset, every run explores anew.
  if "$build/bin/fuzz_$target" -max_total_time="$seconds" -runs="$runs" -seed="${GATEHOUSE_FUZZ_SEED:-0}" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$work/$target-" \
    "$work/$target" "tests/fuzz/corpus/$target" >"$log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|new_units_added)|^Done ' "$log" | sed "s/^/  $target: /" >&2 || true
  else
    tail -n 60 "$log" >&2
    echo "fuzz_$target FAILED; reproducer and log in $work/ (replay: $build/bin/fuzz_$target FILE)" >&2
    failed+=("$target")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz targets failed: ${failed[*]}" >&2
  exit 1
fi
