#!/bin/bash
# fuzz/run-all.sh - build the libFuzzer targets with clang (AddressSanitizer,
# UndefinedBehaviorSanitizer, LeakSanitizer) in a build folder of their own
# and run each for a bounded time from its committed seed corpus.  Any crash,
# leak, sanitizer report or hang (an input slower than FUZZ_TIMEOUT seconds)
# fails the run.  Output: a TAP stream, one test point per target, with the
# number of executions each ran without a finding.
#
#   fuzz/run-all.sh [seconds per target, default 60]
#   env: FUZZ_BUILD (build folder, default /tmp/ggmlc-fuzz-build), FUZZ_TIMEOUT (default 10),
#        FUZZ_JOBS (make -j, default 2), CC (default clang),
#        FUZZ_SEED (libFuzzer's -seed, default 1: CI replays the same mutations on every run,
#        so a finding reproduces and a run that passed here passes there; 0 draws a new seed,
#        for the longer exploratory runs that look for new bugs)
set -uo pipefail
srcdir=$(cd "$(dirname "$0")/.." && pwd)
corpus=$srcdir/fuzz/corpus
seconds=${1:-60}
build=${FUZZ_BUILD:-/tmp/ggmlc-fuzz-build}
timeout=${FUZZ_TIMEOUT:-10}
targets="fuzz-gguf fuzz-config fuzz-model fuzz-dataset"

echo "1..$(echo $targets | wc -w)"
mkdir -p "$build" && cd "$build" || exit 1
if [ ! -f Makefile ]; then
    srcdir=$("$srcdir/tools/source-copy.sh" "$srcdir" "$build/src") || { echo "Bail out! no source tree to configure"; exit 1; }
    [ -x "$srcdir/configure" ] || (cd "$srcdir" && autoreconf -fi >/dev/null 2>&1)
    "$srcdir/configure" -q --enable-fuzz --without-vulkan CC="${CC:-clang}" \
        CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined" \
        >configure.log 2>&1 || { tail -20 configure.log | sed 's/^/# /'; echo "Bail out! configure failed"; exit 1; }
fi
make -j"${FUZZ_JOBS:-2}" fuzz >make.log 2>&1 || { tail -30 make.log | sed 's/^/# /'; echo "Bail out! make fuzz failed"; exit 1; }
# The CPU plugin is GCC code (target attributes clang rejects) and is not what is
# fuzzed: built by gcc, uninstrumented, it binds to this folder's libggmlc (same soname).
make -j"${FUZZ_JOBS:-2}" plugins/cpu/cpu.la CC="${PLUGIN_CC:-gcc}" CFLAGS="-O2 -g" >>make.log 2>&1 ||
    { tail -30 make.log | sed 's/^/# /'; echo "Bail out! the CPU plugin failed to build"; exit 1; }

# The targets that need a backend find the CPU plugin of this build folder.
printf '[ggmlc]\nbackends = cpu\n[backend.cpu]\nlibrary = %s/plugins/cpu/.libs/cpu.so\nthreads = 1\n' "$build" >fuzz.ini
export GGMLC_CONFIG=$build/fuzz.ini
# A hostile file may declare gigabytes (a model's weights are allocated before they are compared
# with the file's tensors): allocations over 1 GiB fail, so the error path runs instead of libFuzzer's
# malloc limit ending the run.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:max_allocation_size_mb=1024
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

status=0 n=0
for t in $targets; do
    n=$((n + 1))
    work=$build/corpus/$t
    mkdir -p "$work" "$build/artifacts/$t"
    cp -n "$corpus/$t/"* "$work/" 2>/dev/null
    log=$build/$t.log
    fuzz/$t -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$build/artifacts/$t/" -print_final_stats=1 "$work" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [ $rc = 0 ]; then
        echo "ok $n - $t: ${execs:-?} executions in ${seconds} s without a finding"
    else
        status=1
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -10 | sed 's/^/# /'
        echo "not ok $n - $t: a finding after ${execs:-?} executions (log $log)"
    fi
done
exit $status
