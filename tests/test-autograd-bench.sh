#!/bin/sh
# test-autograd-bench.sh - ggmlc-bench's eager modes (bench/eager.c) run and report (TAP):
# eager-op and eager-mlp on small sizes print their figures, and bad options are a usage error.
: "${GGMLC_BUILDDIR:?run through make check}"
tool="$GGMLC_BUILDDIR/tools/ggmlc-bench"
. "$GGMLC_TEST_DATA/taplib.sh"
out=$("$tool" eager-op --ops 2000 2>&1)
echo "$out" | grep -q "us/op"
ok $? "eager-op reports microseconds per op ($out)"
out=$("$tool" eager-mlp --steps 2 --rounds 1 --batch 16 2>&1)
echo "$out" | grep -q "static/eager"
ok $? "eager-mlp reports the eager and the static-graph step ($(echo "$out" | tail -n 1))"
"$tool" eager-mlp --steps 0 >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "eager-mlp --steps 0 is a usage error"
tap_done
