# Sourced by run_stdio_bench.sh and run_http_bench.sh when BASELINE=<git
# revision> is set: builds that revision of the repository, so that one run
# measures the code before a change beside the code after it.
#
#   build_baseline BUILD_DIR REV TARGET...
#
# Checks REV out in a git worktree, BUILD_DIR/baseline-src (moved to REV when
# it holds another commit), and builds only TARGET... in its own build
# directory, BUILD_DIR/baseline-build (RelWithDebInfo, with BUILD_DIR's
# compiler launcher, e.g. ccache). Both are kept, so a later run with the same
# REV rebuilds nothing. Sets baseline_build_dir. Progress goes to stderr.

build_baseline() {
    local build=$1 rev=$2
    shift 2
    local repo commit src=$build/baseline-src
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    baseline_build_dir=$build/baseline-build

    if ! commit=$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}"); then
        echo "BASELINE=$rev is not a revision of this repository" >&2
        return 1
    fi
    echo "building the baseline $rev ($commit) in $baseline_build_dir" >&2
    if [[ ! -e $src/.git ]]; then
        git -C "$repo" worktree prune # a baseline-src removed by hand
        git -C "$repo" worktree add --detach "$src" "$commit" >&2
    elif [[ $(git -C "$src" rev-parse HEAD) != "$commit" ]]; then
        git -C "$src" checkout --quiet --detach "$commit" >&2
    fi

    if [[ ! -f $baseline_build_dir/CMakeCache.txt ]]; then
        # The same compiler launcher as the current tree's build, if it has one.
        local lang launcher args=()
        for lang in C CXX; do
            launcher=$(sed -n "s/^CMAKE_${lang}_COMPILER_LAUNCHER:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null || true)
            [[ -z $launcher ]] || args+=("-DCMAKE_${lang}_COMPILER_LAUNCHER=$launcher")
        done
        # The echo test family is built with the tests; the benchmarks are not needed.
        cmake -S "$src" -B "$baseline_build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DGATEHOUSE_BUILD_TESTS=ON -DGATEHOUSE_BUILD_BENCH=OFF "${args[@]}" >&2
    fi
    cmake --build "$baseline_build_dir" -j2 --target "$@" >&2
}
