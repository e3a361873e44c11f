#!/bin/sh
# test-quant-activations, test-quant-match (Q8_0 and Q4_0 products give ggml's bits, also
# from CPU_REPACK buffers) and test-ggml-rounding (flash attention's f16 loops: the portable
# ones on generic, the AVX2 intrinsics on avx2) on the CPU plugin's lower SIMD paths
# (GGMLC_CPU_PATH): the
# columns of a quantized product are the same bits at 1, 8 and 64 columns and agree with
# the rounded-activation reference on every path, not only the best one.
echo "1..6"
n=0
for prog in test-quant-activations test-quant-match test-ggml-rounding; do
    for path in avx2 generic; do
        n=$((n + 1))
        out=$(GGMLC_CPU_PATH=$path "$GGMLC_BUILDDIR/tests/$prog" 2>&1)
        if [ $? -eq 0 ] && ! echo "$out" | grep -q "^not ok"; then
            echo "ok $n - $prog with GGMLC_CPU_PATH=$path"
        else
            echo "not ok $n - $prog with GGMLC_CPU_PATH=$path"
            echo "$out" | grep -v "^ok" | sed 's/^/# /'
        fi
    done
done
