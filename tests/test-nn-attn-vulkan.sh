#!/bin/sh
# test-nn-attn-vulkan.sh - tests/test-nn-attn (attention, Transformer and Stable-Diffusion blocks
# against PyTorch golden data, forward and one training step) run again with the Vulkan plugin
# first in the configuration: it must pass, with graph splits on the Vulkan device (operators
# Vulkan lacks may run on the CPU; their count is reported).  Skipped without a Vulkan device.

: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-nn-attn-vulkan.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

GGMLC_CONFIG="$ini" GGMLC_DEBUG=sched XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache" \
    "$GGMLC_BUILDDIR/tests/test-nn-attn" >"$tmp/out.txt" 2>&1
st=$?
on_gpu=$(grep -c "^sched: split [0-9]* on Vulkan" "$tmp/out.txt")
on_cpu=$(grep -c "^sched: split [0-9]* on CPU" "$tmp/out.txt")
if [ "$on_gpu" -eq 0 ] && [ "$st" -eq 0 ]; then
    echo "1..0 # SKIP no Vulkan device (test-nn-attn ran on the CPU)"
    exit 0
fi
failed=0
if [ "$st" -eq 0 ] && ! grep -q "^not ok" "$tmp/out.txt"; then
    echo "ok 1 - test-nn-attn passes with Vulkan first ($(grep -c '^ok' "$tmp/out.txt") tests)"
else
    echo "not ok 1 - test-nn-attn passes with Vulkan first (status $st)"
    grep "^not ok" "$tmp/out.txt" | sed 's/^/# /'
    failed=1
fi
if [ "$on_gpu" -gt 0 ]; then
    echo "ok 2 - $on_gpu graph splits ran on Vulkan ($on_cpu on the CPU)"
else
    echo "not ok 2 - no graph split ran on Vulkan"
    failed=1
fi
echo "1..2"
exit $failed
