#!/bin/bash
# test-dp-netns.sh - data-parallel training over MPI between two "hosts": two network
# namespaces joined by a virtual Ethernet link, Open MPI over TCP between them (its rsh launcher
# replaced by `ip netns exec`), as on two machines.  Two ranks, one per namespace, end with the
# weights of one process, and a rank killed on the far side ends the job within a bounded time.
# Skipped, visibly, without root, without network namespaces or without MPI.

: "${GGMLC_BUILDDIR:?run through make check}"
. "$GGMLC_TEST_DATA/taplib.sh"
. "$GGMLC_TEST_DATA/dp-faults.sh"
tool="$GGMLC_BUILDDIR/tools/ggmlc-train"
check="$GGMLC_BUILDDIR/tests/dp-mpi-check"
tests=("two hosts train like one process" "a rank killed on the far host ends the job")
skip() {
    for what in "${tests[@]}"; do
        n=$((n + 1))
        echo "ok $n - $what # SKIP $1"
    done
    tap_done
}
grep -q "define GGMLC_WITH_MPI 1" "$GGMLC_BUILDDIR/config.h" && command -v mpirun >/dev/null ||
    skip "ggmlc was configured without MPI (or mpirun is missing)"
[ "$(id -u)" = 0 ] && command -v ip >/dev/null || skip "needs root and iproute2"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-dp-netns.XXXXXX") || exit 1
a=ggmlc-a$$ b=ggmlc-b$$ net=10.213.7
cleanup() {
    ip netns pids "$a" 2>/dev/null | xargs -r kill -9
    ip netns pids "$b" 2>/dev/null | xargs -r kill -9
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
{ ip netns add "$a" && ip netns add "$b" &&
    ip link add "va$$" type veth peer name "vb$$" &&
    ip link set "va$$" netns "$a" && ip link set "vb$$" netns "$b" &&
    ip -n "$a" addr add "$net.1/24" dev "va$$" && ip -n "$b" addr add "$net.2/24" dev "vb$$" &&
    ip -n "$a" link set "va$$" up && ip -n "$b" link set "vb$$" up &&
    ip -n "$a" link set lo up && ip -n "$b" link set lo up; } 2>"$tmp/netns.txt" ||
    skip "cannot create network namespaces: $(head -1 "$tmp/netns.txt")"

# Open MPI starts its daemon on each host through this agent: the host's address names its
# namespace.
cat >"$tmp/agent" <<SH
#!/bin/bash
while [[ "\$1" == -* ]]; do shift; done
case "\$1" in $net.1) ns=$a ;; $net.2) ns=$b ;; *) echo "unknown host \$1" >&2; exit 1 ;; esac
shift
exec ip netns exec "\$ns" /bin/bash -c "\$*"
SH
printf '%s slots=1\n' "$net.1" "$net.2" >"$tmp/hosts"
chmod +x "$tmp/agent"
cat >"$tmp/rank.sh" <<SH
#!/bin/sh
d="$tmp/\$1/r\$OMPI_COMM_WORLD_RANK"; shift
mkdir -p "\$d" && cd "\$d" && ip -br addr >addr.txt && exec "\$@" >out.txt 2>err.txt
SH
chmod +x "$tmp/rank.sh"
GGMLC_DATA_DIR="$GGMLC_TEST_DATA/../data"
export GGMLC_DATA_DIR
mpi() {
    timeout 240 ip netns exec "$a" mpirun --allow-run-as-root -np 2 --hostfile "$tmp/hosts" \
        --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self \
        --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
        -x GGMLC_CONFIG -x GGMLC_DATA_DIR "$@"
}
train="--epochs 2 --seed 3 --quiet"

(cd "$tmp" && "$tool" $train --replicas 1 --save single.gguf >single.txt 2>&1)
mpi "$tmp/rank.sh" two "$tool" $train --save model.gguf >"$tmp/mpi.txt" 2>&1 &&
    grep -q "$net.1/" "$tmp/two/r0/addr.txt" && grep -q "$net.2/" "$tmp/two/r1/addr.txt" &&
    "$check" "$tmp/two/r0/model.gguf" "$tmp/single.gguf" 2e-4 >"$tmp/cmp.txt" 2>&1
ok $? "two hosts train like one process: $(cat "$tmp/cmp.txt" "$tmp/mpi.txt" | head -3)"

rank_fault_script "$tmp/die.sh" KILL
run_timed mpi "$tmp/die.sh" "$tool" --epochs 100000 --quiet >"$tmp/die.txt" 2>&1
test "$st" -ne 0 && test "$st" -ne 124 && test "$took" -lt 120
ok $? "a rank killed on the far host ends the job with status $st after $took s"
tap_done
