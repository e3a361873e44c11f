#!/bin/sh
# test-example-autograd.sh - examples/autograd-mlp trains the embedded digits with the eager
# engine (modules, AdamW, cosine schedule, clipping, loader) to a test accuracy of at least 0.9.
: "${GGMLC_BUILDDIR:?run through make check}"
echo "1..1"
out=$("$GGMLC_BUILDDIR/examples/autograd-mlp" --epochs 8 --min-accuracy 0.9 2>&1)
status=$?
echo "$out" | sed 's/^/# /'
if [ $status -eq 0 ]; then echo "ok 1 - eager MLP on digits reaches 0.9 test accuracy"
else echo "not ok 1 - eager MLP on digits reaches 0.9 test accuracy (status $status)"; fi
