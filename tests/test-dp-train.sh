#!/bin/sh
# test-dp-train.sh - data-parallel training with ggmlc-train (TAP).  In one process: 2 replicas,
# and 2 replicas with shares 1:3, train to the weights of one replica; bad --shares are refused.
# Over MPI (libggmlc-mpi): mpirun -np 2 trains to the same weights as one process (one replica,
# and two replicas per process), only rank 0 prints and writes the checkpoint, the checkpoint
# resumes on another number of replicas, and a killed or a hung rank ends the job with an error
# within a bounded time; those are skipped, visibly, when ggmlc was configured without MPI.

: "${GGMLC_BUILDDIR:?run through make check}"
. "$GGMLC_TEST_DATA/taplib.sh"
. "$GGMLC_TEST_DATA/dp-faults.sh"
tool="$GGMLC_BUILDDIR/tools/ggmlc-train"
check="$GGMLC_BUILDDIR/tests/dp-mpi-check"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-dp-train.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
GGMLC_DATA_DIR="$GGMLC_TEST_DATA/../data"
export GGMLC_DATA_DIR
# The ranks share the 2 cores of CI machines: one CPU thread each.
mpi() { timeout 240 mpirun -np 2 --oversubscribe --allow-run-as-root "$@"; }
train="--epochs 2 --seed 3 --quiet"

# One process, one replica (the data-parallel path: the same seeded sharding).
(cd "$tmp" && "$tool" $train --replicas 1 --save single.gguf >single.txt 2>&1)
ok $? "one process, one replica trains"

# In one process: 2 replicas, even and 1:3 shares.
(cd "$tmp" && "$tool" $train --replicas 2 --save two.gguf >two.txt 2>&1) &&
    "$check" "$tmp/two.gguf" "$tmp/single.gguf" 2e-4 >"$tmp/cmp.txt" 2>&1
ok $? "2 replicas end with the weights of one: $(cat "$tmp/cmp.txt")"
(cd "$tmp" && "$tool" $train --replicas 2 --shares 1,3 --save shares.gguf >shares.txt 2>&1) &&
    "$check" "$tmp/shares.gguf" "$tmp/single.gguf" 2e-4 >"$tmp/cmp.txt" 2>&1
ok $? "2 replicas with shares 1:3 end with the weights of one: $(cat "$tmp/cmp.txt")"
"$tool" --replicas 2 --shares 1,-1 >"$tmp/bad.txt" 2>&1
st=$?
test $st -eq 2 && grep -q "invalid value '1,-1' for --shares" "$tmp/bad.txt"
ok $? "--shares 1,-1 exits 2: $(cat "$tmp/bad.txt")"
"$tool" --replicas 3 --shares 1,2 --epochs 1 --quiet >"$tmp/bad.txt" 2>&1
st=$?
test $st -eq 4 && grep -q "2 shares for 3 replicas" "$tmp/bad.txt"
ok $? "2 shares for 3 replicas exit 4: $(grep -m1 "shares for" "$tmp/bad.txt")"

if ! grep -q "define GGMLC_WITH_MPI 1" "$GGMLC_BUILDDIR/config.h" || ! command -v mpirun >/dev/null; then
    for what in "mpirun -np 2 trains like one process" "only rank 0 prints and saves" \
        "2 processes of 2 replicas" "resuming on another count" "a killed rank" "a hung rank"; do
        n=$((n + 1))
        echo "ok $n - $what # SKIP ggmlc was configured without MPI (or mpirun is missing)"
    done
    tap_done
fi

# Two processes, each in its own folder: rank r writes only below r<r>.
cat >"$tmp/rank.sh" <<SH
#!/bin/sh
d="$tmp/\$1/r\$OMPI_COMM_WORLD_RANK"; shift
mkdir -p "\$d" && cd "\$d" && exec "\$@" >out.txt 2>err.txt
SH
chmod +x "$tmp/rank.sh"
mpi "$tmp/rank.sh" np2 "$tool" $train --save model.gguf
ok $? "mpirun -np 2 ggmlc-train trains"
test -s "$tmp/np2/r0/model.gguf" && test ! -e "$tmp/np2/r1/model.gguf"
ok $? "only rank 0 writes the checkpoint"
grep -q "^test accuracy" "$tmp/np2/r0/out.txt" && test ! -s "$tmp/np2/r1/out.txt"
ok $? "only rank 0 prints"
"$check" "$tmp/np2/r0/model.gguf" "$tmp/single.gguf" 2e-4 >"$tmp/cmp.txt" 2>&1
ok $? "2 processes end with the weights of one: $(cat "$tmp/cmp.txt")"

mpi "$tmp/rank.sh" np2x2 "$tool" $train --replicas 2 --save model.gguf
st=$?
"$check" "$tmp/np2x2/r0/model.gguf" "$tmp/single.gguf" 2e-4 >"$tmp/cmp.txt" 2>&1
ok $((st || $?)) "2 processes of 2 replicas end with the weights of one: $(cat "$tmp/cmp.txt")"

(cd "$tmp" && "$tool" --epochs 1 --quiet --load np2/r0/model.gguf --replicas 3 >resume.txt 2>&1) &&
    grep -q "^test accuracy" "$tmp/resume.txt"
ok $? "the 2-process checkpoint resumes on 3 replicas in one process"

# A rank killed mid-training: mpirun ends the job, with an error, long before the run would.
rank_fault_script "$tmp/die.sh" KILL
run_timed mpi "$tmp/die.sh" "$tool" --epochs 100000 --quiet >"$tmp/die.txt" 2>&1
test "$st" -ne 0 && test "$took" -lt 120
ok $? "a killed rank ends the job with status $st after $took s"

# A rank that hangs (stopped): the others' collective times out (GGMLC_DP_TIMEOUT) and ends the job.
rank_fault_script "$tmp/hang.sh" STOP
GGMLC_DP_TIMEOUT=5
export GGMLC_DP_TIMEOUT
run_timed mpi -x GGMLC_DP_TIMEOUT "$tmp/hang.sh" "$tool" --epochs 100000 --quiet >"$tmp/hang.txt" 2>&1
test "$st" -ne 0 && test "$took" -lt 120 && grep -q "did not complete within 5.0 s" "$tmp/hang.txt"
ok $? "a hung rank ends the job with status $st after $took s: $(grep -m1 'did not complete' "$tmp/hang.txt")"
tap_done
