#!/bin/sh
# The README's example program: a matrix product, bias and softmax through ggml's
# public API, checked by the program itself against plain C; also forced onto the CPU.
echo "1..2"
out=$("$GGMLC_BUILDDIR/examples/ggmlc-example-matmul" 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "matches the plain C computation"; then
    echo "ok 1 - ggmlc-example-matmul on the best backend matches plain C"
else
    echo "not ok 1 - ggmlc-example-matmul on the best backend"; echo "$out" | sed 's/^/# /'
fi
out=$(GGMLC_BACKENDS=cpu "$GGMLC_BUILDDIR/examples/ggmlc-example-matmul" 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "backend: CPU" && echo "$out" | grep -q "matches"; then
    echo "ok 2 - GGMLC_BACKENDS=cpu runs it on the CPU"
else
    echo "not ok 2 - GGMLC_BACKENDS=cpu"; echo "$out" | sed 's/^/# /'
fi
