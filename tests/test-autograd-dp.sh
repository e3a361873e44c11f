#!/bin/sh
# test-autograd-dp.sh - eager data parallelism (ga_dp_allreduce_grads) over MPI: mpirun -np 2
# tests/autograd-dp-check (its TAP comes from rank 0).  Skipped without MPI.
: "${GGMLC_BUILDDIR:?run through make check}"
check="$GGMLC_BUILDDIR/tests/autograd-dp-check"
if [ ! -x "$check" ] || ! command -v mpirun >/dev/null; then
    echo "1..0 # SKIP ggmlc was configured without MPI (or mpirun is missing)"
    exit 0
fi
exec timeout 120 mpirun -np 2 --oversubscribe --allow-run-as-root "$check"
