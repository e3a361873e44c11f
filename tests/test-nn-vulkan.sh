#!/bin/sh
# test-nn-vulkan.sh - the layer and model tests of tests/test-nn (outputs and
# one training step against PyTorch golden data: dense, conv, pooling, batch
# and layer normalization, embedding, LSTM, GRU, ...) run again with the Vulkan
# plugin first in the configuration; they must pass, and the scheduler's trace
# must show every graph on the Vulkan device, none split off to the CPU (TAP).
# Skipped when the Vulkan plugin is not built or finds no device.
# Another test program of the same kind: GGMLC_NN_VULKAN_TEST names it, and
# GGMLC_NN_VULKAN_CPU_SPLITS=1 lets splits run on the CPU (counted, not failed).

: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-nn-vulkan.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
test=${GGMLC_NN_VULKAN_TEST:-test-nn}

GGMLC_CONFIG="$ini" GGMLC_DEBUG=sched XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache" \
    "$GGMLC_BUILDDIR/tests/$test" >"$tmp/out.txt" 2>&1
st=$?
on_gpu=$(grep -c "^sched: split [0-9]* on Vulkan" "$tmp/out.txt")
on_cpu=$(grep -c "^sched: split [0-9]* on CPU" "$tmp/out.txt")
if [ "$on_gpu" -eq 0 ] && [ "$st" -eq 0 ]; then
    echo "1..0 # SKIP no Vulkan device ($test ran on the CPU)"
    exit 0
fi
failed=0
if [ "$st" -eq 0 ] && ! grep -q "^not ok" "$tmp/out.txt"; then
    echo "ok 1 - $test passes with Vulkan first ($(grep -c '^ok' "$tmp/out.txt") tests)"
else
    echo "not ok 1 - $test passes with Vulkan first (status $st)"
    grep "^not ok" "$tmp/out.txt" | sed 's/^/# /'
    failed=1
fi
if [ "$on_cpu" -eq 0 ]; then
    echo "ok 2 - all $on_gpu graph splits ran on Vulkan, none on the CPU"
elif [ "${GGMLC_NN_VULKAN_CPU_SPLITS:-0}" = 1 ]; then
    echo "ok 2 - $on_gpu graph splits ran on Vulkan, $on_cpu on the CPU (allowed)"
else
    echo "not ok 2 - $on_cpu graph splits ran on the CPU (of $((on_gpu + on_cpu)))"
    grep -B1 "^sched: split [0-9]* on CPU" "$tmp/out.txt" | head -10 | sed 's/^/# /'
    failed=1
fi
echo "1..2"
exit $failed
