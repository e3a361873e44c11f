#!/bin/bash
# tools/sanitize-check.sh - the test suite under the sanitizers, each in a
# build folder of its own (out of tree; the source tree stays clean):
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer, whole `make check`
#         (fault injection and the fuzz-corpus replays included, so their error paths are leak-checked);
#   tsan: ThreadSanitizer over the threaded tests (CPU thread pool, scheduler, concurrent contexts,
#         data-parallel replicas).
#
#   tools/sanitize-check.sh [asan] [tsan]      (default: both)
#   env: SANITIZE_BUILD (parent folder, default /tmp/ggmlc-sanitize), JOBS (make -j, default 2)
# Exit status non-zero when a build fails or any test fails.  The .trs files
# of each build folder hold the TAP results (.ci/run counts them).
set -uo pipefail
srcdir=$(cd "$(dirname "$0")/.." && pwd)
parent=${SANITIZE_BUILD:-/tmp/ggmlc-sanitize}
jobs=${JOBS:-2}
kinds=${*:-asan tsan}
srcdir=$("$srcdir/tools/source-copy.sh" "$srcdir" "$parent/src") || exit 1
[ -x "$srcdir/configure" ] || (cd "$srcdir" && autoreconf -fi >/dev/null 2>&1)

configure_in() { # folder, CFLAGS, LDFLAGS
    mkdir -p "$1" && cd "$1" || return 1
    # without MPI: Open MPI's own allocations would fail the leak checks of the mpirun tests
    [ -f Makefile ] || "$srcdir/configure" -q --without-vulkan --without-mpi CFLAGS="$2" LDFLAGS="$3" >configure.log 2>&1 ||
        { tail -20 configure.log; return 1; }
}

status=0
for kind in $kinds; do
    case $kind in
    asan)
        echo "== AddressSanitizer + UndefinedBehaviorSanitizer: make check"
        configure_in "$parent/asan" "-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
            "-fsanitize=address,undefined" || { status=1; continue; }
        # allocator_may_return_null: impossible sizes (ggml_init near SIZE_MAX, ggmlc-bench --size
        # 10^18) must reach the code's own NULL checks, as they do without the sanitizer.
        # detect_stack_use_after_return=0: its fake stack frames are 32-byte aligned, and the
        # AVX-512 clones of the CPU plugin keep 64-byte-aligned vector locals (vmovdqa64), which
        # faulted there on an AVX-512 machine (flash attention's block_scores), not in real runs.
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0:allocator_may_return_null=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
        make -j"$jobs" >build.log 2>&1 || { tail -30 build.log; status=1; continue; }
        # LDFLAGS in the environment reaches the demo program that test-plugin-sdk.sh builds as a
        # third party would: linked with the sanitizer runtime, as a program using this libggmlc must be.
        LDFLAGS="-fsanitize=address,undefined" make -j"$jobs" check >check.log 2>&1 || { status=1; tail -40 test-suite.log; }
        grep -E '^# (TOTAL|PASS|FAIL|ERROR|SKIP)' check.log
        unset ASAN_OPTIONS UBSAN_OPTIONS
        ;;
    tsan)
        echo "== ThreadSanitizer: threaded tests"
        configure_in "$parent/tsan" "-g -O1 -fno-omit-frame-pointer -fsanitize=thread" "-fsanitize=thread" || { status=1; continue; }
        export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
        make -j"$jobs" >build.log 2>&1 || { tail -30 build.log; status=1; continue; }
        make -j"$jobs" check TESTS="tests/test-threads tests/test-sched tests/test-cpu-api tests/test-loader tests/test-dp" >check.log 2>&1 ||
            { status=1; tail -40 test-suite.log; }
        grep -E '^# (TOTAL|PASS|FAIL|ERROR|SKIP)' check.log
        unset TSAN_OPTIONS
        ;;
    *) echo "unknown sanitizer run '$kind' (asan, tsan)"; status=1 ;;
    esac
done
exit $status
