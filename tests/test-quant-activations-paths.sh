#!/bin/sh
# test-quant-activations on the CPU plugin's lower SIMD paths (GGMLC_CPU_PATH): the
# columns of a quantized product are the same bits at 1, 8 and 64 columns and agree with
# the rounded-activation reference on every path, not only the best one.
echo "1..2"
n=0
for path in avx2 generic; do
    n=$((n + 1))
    out=$(GGMLC_CPU_PATH=$path "$GGMLC_BUILDDIR/tests/test-quant-activations" 2>&1)
    if [ $? -eq 0 ] && ! echo "$out" | grep -q "^not ok"; then
        echo "ok $n - test-quant-activations with GGMLC_CPU_PATH=$path"
    else
        echo "not ok $n - test-quant-activations with GGMLC_CPU_PATH=$path"
        echo "$out" | grep -v "^ok" | sed 's/^/# /'
    fi
done
