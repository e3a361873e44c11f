#!/bin/sh
# test-vulkan-train-kernels.sh - one training step of ggmlc-bench train-epoch's CNN (batch
# 32) on the Vulkan plugin, its dispatches listed (GGMLC_DEBUG=vulkan-ops): the weight
# gradients of the convolutions and the dense layer's product are split along k (an
# mm_split_sum follows them) and the convolutions' bias gradients sum with a workgroup per
# channel (repeat_back_wg): before, one workgroup (or 32 invocations) walked the batch's
# 25088 pixels, most of the step's 7.2 ms on an H200; no node falls back to the CPU.  The values of
# those kernels are checked against the CPU by test-vulkan (vk-test-cases-train.c).
# Skipped when the Vulkan plugin is not built or finds no device.

: "${GGMLC_BUILDDIR:?run through make check}"
ini="$GGMLC_BUILDDIR/tests/ggmlc-test-vulkan.ini"
if [ ! -r "$ini" ]; then
    echo "1..0 # SKIP the Vulkan plugin is not built"
    exit 0
fi
. "$GGMLC_TEST_DATA/taplib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-vk-train.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

GGMLC_CONFIG="$ini" GGMLC_DEBUG=vulkan-ops XDG_CACHE_HOME="$GGMLC_BUILDDIR/tests/vk-cache" \
    "$GGMLC_BUILDDIR/tools/ggmlc-bench" train-epoch --model cnn --batch 32 --epochs 1 --samples 32 \
    --backend vulkan >"$tmp/out.txt" 2>&1
st=$?
if [ "$st" -ne 0 ] && grep -q "no backend or device named 'vulkan'" "$tmp/out.txt"; then
    echo "1..0 # SKIP no Vulkan device"
    exit 0
fi
ok "$st" "ggmlc-bench train-epoch --model cnn runs one step on Vulkan"
# the training graph (the one with the optimizer's steps)
awk '/graph of/ { g++ } /dispatch [0-9]+ / { print g, $(NF-2) }' "$tmp/out.txt" \
    >"$tmp/dispatches.txt"
step=$(awk '$2 == "optstep_f32:" { print $1; exit }' "$tmp/dispatches.txt")
splits=$(awk -v g="$step" '$1 == g && $2 == "mm_split_sum:"' "$tmp/dispatches.txt" | wc -l)
[ "$splits" -ge 3 ]
ok $? "the step splits its long products along k: $splits mm_split_sum dispatches (3 at least)"
sums=$(awk -v g="$step" '$1 == g && $2 == "repeat_back_wg_f32:"' "$tmp/dispatches.txt" | wc -l)
[ "$sums" -eq 2 ]
ok $? "the convolutions' bias gradients take a workgroup per channel: $sums repeat_back_wg (2)"
grep -q "per step:.* 0.00 fallback nodes" "$tmp/out.txt"
ok $? "no node of the step falls back to the CPU"
[ "$failed" -eq 0 ] || sed 's/^/# /' "$tmp/out.txt" | grep -v "dispatch [0-9]" | head -20
tap_done
