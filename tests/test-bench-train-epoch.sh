#!/bin/sh
# test-bench-train-epoch.sh - ggmlc-bench train-epoch (bench/train-epoch.c, train-epoch-opt.c) on
# the CPU, through the model API and through ggml-opt (TAP): each trains a few steps on
# synthetic images and reports its epochs, and bad options are a usage error.
: "${GGMLC_BUILDDIR:?run through make check}"
tool="$GGMLC_BUILDDIR/tools/ggmlc-bench"
. "$GGMLC_TEST_DATA/taplib.sh"
for api in model opt; do
    out=$("$tool" train-epoch --api $api --epochs 2 --samples 320 --batch 32 2>&1)
    echo "$out" | grep -q "^epoch 2: .* per step: .* fallback nodes" && echo "$out" | grep -q "^epoch time"
    ok $? "train-epoch --api $api trains two epochs and reports them ($(echo "$out" | tail -n 1))"
done
"$tool" train-epoch --api opt --model cnn >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "train-epoch --api opt --model cnn is a usage error (ggml-opt trains the MLP only)"
"$tool" train-epoch --api keras >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "train-epoch --api keras is a usage error"
tap_done
