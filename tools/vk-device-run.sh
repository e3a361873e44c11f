#!/bin/bash
# vk-device-run.sh - the Vulkan test suite and benchmarks on a borrowed GPU
# machine (the `device` tool), from a build made elsewhere.  It builds nothing.
#
# Prepare on the build machine (see BENCHMARKS.md, "Vulkan (H200)"):
#   P=.gpu-prefix/vulkan
#   ./configure --prefix=$PWD/$P && make && make install && make tests/test-vulkan
#   cp tests/.libs/test-vulkan $P/bin/; cp tools/vk-device-run.sh $P/
#   (cd $P/gl/root && apt-get download libvulkan1 ...)   # see /work/shared/tools/device-vulkan-prep
# Run there, from the repository root, carrying $P:
#   bash .gpu-prefix/vulkan/vk-device-run.sh [tests] [suites] [bench] [sweep] [torch] [all]
# ($VK_RUN, when set, is run first in the same environment: experiments)
# (the loader packages are taken from $P/gl, or from .gl in the current directory).
# "sweep" times the tuning variants (tile and row-count overrides) of the kernels:
# VK_SWEEP_MV, VK_SWEEP_MVQ, VK_SWEEP_MVQL, VK_SWEEP_MVQG, VK_SWEEP_MVQD, VK_SWEEP_MM, VK_SWEEP_COOPMAT,
# VK_SWEEP_COOPMAT_FLEX (k per product of the flexible-size coopmat variant)
# (lists of override values; one of spaces only skips that part); the coopmat tiles are
# timed with each activation type of VK_SWEEP_BTYPE (f32 f16).  "tests" also reruns the
# mm_ cases with each coopmat tile of VK_TEST_COOPMAT (none unless set).
# Everything is printed and also written to $OUT/vk-device.log when $OUT is set; the
# last lines summarise each benchmark's median GPU time and rate.  Each benchmark warms the GPU
# up for 3 s first (ggmlc-bench), so "bench" takes about 6-8 minutes: run it in a call of its own.
set -u
P=${VK_PREFIX:-$(cd "$(dirname "$0")" && pwd)}
what=" ${*:-all} "
log=${OUT:-/tmp}/vk-device.log
mkdir -p "$(dirname "$log")"
: > "$log"
say() { echo "$@" | tee -a "$log"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$log"; }

# The GPU machine has NVIDIA's driver but no Vulkan loader: unpack the carried
# packages (VK_LOCAL=1 skips this, to try the script on the build machine).
GL=$P/gl
[ -d "$GL" ] || GL=$PWD/.gl
if [ -z "${VK_LOCAL:-}" ]; then
    for f in "$GL"/root/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
    ldconfig
    mkdir -p /tmp/gl
    for f in "$GL"/lib/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/gl; done
fi
export LD_LIBRARY_PATH="$P/lib:/tmp/gl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="$P/bin:/tmp/gl/usr/bin:$PATH"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! vulkaninfo --summary >/dev/null 2>&1 && [ -f $icd ]; then
    export VK_DRIVER_FILES=$icd
fi

cat > /tmp/ggmlc-gpu.ini <<EOF
[ggmlc]
backends = vulkan, cpu
[backend.vulkan]
library = $P/lib/ggmlc/vulkan.so
device = auto
[backend.cpu]
library = $P/lib/ggmlc/cpu.so
threads = 16
EOF
export GGMLC_CONFIG=/tmp/ggmlc-gpu.ini GGMLC_TEST_KEEP_CONFIG=1

run vulkaninfo --summary
run ggmlc-info

# $VK_RUN: any further command, run in this environment (loader, config, PATH) first
if [ -n "${VK_RUN:-}" ]; then
    say "== $VK_RUN"
    bash -c "$VK_RUN" 2>&1 | tee -a "$log"
fi

if [[ $what == *" tests "* || $what == *" all "* ]]; then
    say "== test-vulkan (Vulkan vs the CPU backend)"
    run timeout 180 test-vulkan
    say "== test-vulkan without cooperative matrices"
    run env GGMLC_VK_COOPMAT=0 GGMLC_TEST_ONLY=mm_ timeout 60 test-vulkan
    say "== test-vulkan mm_ cases with 16x16 cooperative-matrix fragments only (no flexible sizes)"
    run env GGMLC_VK_COOPMAT_FLEX=0 GGMLC_TEST_ONLY=mm_ timeout 60 test-vulkan
    say "== test-vulkan mm_ cases with the NV extension's 16x16 fragments"
    run env GGMLC_VK_COOPMAT_FLEX=0 GGMLC_VK_COOPMAT_KHR=0 GGMLC_TEST_ONLY=mm_ timeout 60 test-vulkan
    say "== test-vulkan mm_ cases with f32 activations packed, block-format weights dequantized at every size, k split in 3"
    run env GGMLC_VK_COOPMAT_PACK=1 GGMLC_VK_COOPMAT_DEQUANT=1 GGMLC_VK_COOPMAT_SPLIT=3 GGMLC_TEST_ONLY=mm_ timeout 60 test-vulkan
    for tile in ${VK_TEST_COOPMAT:-}; do
        say "== test-vulkan mm_ cases, coopmat tile $tile"
        GGMLC_VK_COOPMAT_TILE=$tile GGMLC_TEST_ONLY=mm_ timeout 60 test-vulkan > /tmp/tv.log 2>&1
        say "exit status $?; $(grep -c '^ok' /tmp/tv.log) ok, $(grep -c '^not ok' /tmp/tv.log) not ok"
        grep '^not ok' /tmp/tv.log | head -5 | tee -a "$log"
    done
fi

# The other Vulkan test programs (copy tests/.libs/test-vulkan-train and test-vulkan-faults
# into $P/bin), and ggml's own tests/test-backend-ops when it was built against this
# install into $P/bin (it is not part of the repository; see docs/compatibility.md).
if [[ $what == *" suites "* || $what == *" all "* ]]; then
    for t in test-vulkan-train test-vulkan-faults; do
        command -v $t >/dev/null || continue
        say "== $t"
        run timeout 120 $t
    done
    if command -v test-backend-ops >/dev/null; then
        say "== test-backend-ops test -b Vulkan0"
        timeout ${TBO_TIMEOUT:-300} test-backend-ops test -b Vulkan0 > /tmp/tbo.log 2>&1
        say "exit status $?; failures:"
        grep -E "FAIL" /tmp/tbo.log | head -20 | tee -a "$log"
        grep -E "tests passed|Backend Vulkan0:" /tmp/tbo.log | tee -a "$log"
    fi
fi

# median GPU time (us) of the graphs logged with GGMLC_DEBUG=vulkan: the last 20, the timed runs
# (ggmlc-bench --reps 20; the warm-up runs before them are logged too)
gpu_median() { grep 'us on the GPU' | sed 's/.*barriers, \([0-9.]*\) us.*/\1/' | tail -n 20 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

summary=/tmp/vk-summary.txt
: > $summary
# label, work (bytes for mat-vec: "B:n"; flops for GEMM: "F:n"), then ggmlc-bench arguments
bench() {
    label=$1 work=$2
    shift 2
    say "== $label: ggmlc-bench $*"
    GGMLC_DEBUG=vulkan timeout 90 ggmlc-bench "$@" --backend vulkan --reps 20 --json > /tmp/bench.out 2> /tmp/bench.err
    cat /tmp/bench.out | tee -a "$log"
    us=$(gpu_median < /tmp/bench.err)
    say "gpu_median_us=$us"
    grep -v 'us on the GPU' /tmp/bench.err | grep -iE 'error|fail|fallback|ignored' | head -3 | tee -a "$log"
    awk -v l="$label" -v w="$work" -v us="$us" 'BEGIN { split(w, a, ":"); r = us > 0 ? a[2] / us : 0;
        if (a[1] == "B") printf "%-58s %9.2f us %8.0f GB/s\n", l, us, r / 1e3; else printf "%-58s %9.2f us %8.1f TFLOPS\n", l, us, r / 1e6 }' >> $summary
}
GEMM="--m 4096 --n 4096 --k 4096"
F=F:137438953472
mv() { # weight type, bytes, label suffix
    bench "matrix-vector 14336x4096 $1${3:-}" B:$2 mul_mat --type $1 --m 1 --n 14336 --k 4096
}
# the same, 4 chained products (weights of their own: 4x the bytes, beyond the L2; each reads
# the one before, with a barrier between) in one graph, as a model's layers: the per-graph
# submit cost shared by 4 products.  (With 8, beyond about 500 MB of weights in the graph,
# every product takes about 65 us longer, float kernels too: BENCHMARKS.md.)
mv4() {
    bench "matrix-vector 14336x4096 $1, chain of 4${3:-}" B:$(($2 * 4)) mul_mat --type $1 --m 1 --n 14336 --k 4096 --products 4 --chain
}

# the same, 4 independent products sharing the activations (as a layer's q, k and v
# projections): the activations are quantized once, the products run without barriers between
mvp4() {
    bench "matrix-vector 14336x4096 $1, 4 sharing b${3:-}" B:$(($2 * 4)) mul_mat --type $1 --m 1 --n 14336 --k 4096 --products 4
}

if [[ $what == *" bench "* || $what == *" all "* ]]; then
    bench "GEMM f32 4096^3" $F mul_mat --type f32 $GEMM
    bench "GEMM f16 weights x f32 activations 4096^3 (coopmat)" $F mul_mat --type f16 $GEMM
    bench "GEMM f16 weights x f16 activations 4096^3 (coopmat)" $F mul_mat --type f16 --btype f16 $GEMM
    GGMLC_VK_COOPMAT_FLEX=0 bench "GEMM f16 x f32 4096^3 (coopmat, 16x16 fragments)" $F mul_mat --type f16 $GEMM
    GGMLC_VK_COOPMAT_FLEX=0 bench "GEMM f16 x f16 4096^3 (coopmat, 16x16 fragments)" $F mul_mat --type f16 --btype f16 $GEMM
    GGMLC_VK_COOPMAT_FLEX=0 GGMLC_VK_COOPMAT_KHR=0 bench "GEMM f16 x f32 4096^3 (coopmat, NV 16x16 fragments)" $F mul_mat --type f16 $GEMM
    GGMLC_VK_COOPMAT_FLEX=0 GGMLC_VK_COOPMAT_KHR=0 bench "GEMM f16 x f16 4096^3 (coopmat, NV 16x16 fragments)" $F mul_mat --type f16 --btype f16 $GEMM
    GGMLC_VK_COOPMAT=0 bench "GEMM f16 4096^3 without coopmat" $F mul_mat --type f16 $GEMM
    mv f16 117440512; mv q8_0 62390272; mv q4_0 33030144; mv f32 234881024
    mv q4_1 36700160; mv q5_0 40370176; mv q5_1 44040192; mv q4_K 33030144; mv q5_K 40370176; mv q6_K 48168960
    mv q2_K 19267584; mv q3_K 25231360; mv iq4_nl 33030144; mv iq4_xs 31195136; mv mxfp4 31195136
    # the transposed shape: session 6 saw the K-quants 4-5x slower at 14336 rows of 4096, which session 7
    # traced to the GPU's down-clocking, not to the shape (BENCHMARKS.md); kept to confirm it
    bench "matrix-vector 4096x14336 q4_K" B:33030144 mul_mat --type q4_K --m 1 --n 4096 --k 14336
    bench "matrix-vector 4096x14336 q6_K" B:48168960 mul_mat --type q6_K --m 1 --n 4096 --k 14336
    # quantized weights of prompt-sized products: dequantized into f16 for the coopmat kernel (split
    # along k at 16 columns); the tiled GEMM, 5-8 times slower in session 7, once for comparison
    for n in 16 512; do
        for t in q4_K q8_0; do
            bench "GEMM $t 4096x${n}x4096 (dequantized, coopmat)" F:$((2 * 4096 * 4096 * n)) mul_mat --type $t --m $n --n 4096 --k 4096
        done
    done
    GGMLC_VK_COOPMAT_DEQUANT=0 bench "GEMM q8_0 4096x16x4096 (tiled)" F:$((2 * 4096 * 4096 * 16)) mul_mat --type q8_0 --m 16 --n 4096 --k 4096
    # the float-activation kernels the integer-dot one replaced on devices with dot products
    GGMLC_VK_MVQ_KERNEL=group mv q8_0 62390272 " (grouped kernel)"; GGMLC_VK_MVQ_KERNEL=group mv q4_0 33030144 " (grouped kernel)"
    mv4 f16 117440512; mv4 q8_0 62390272; mv4 q4_0 33030144
    mvp4 f16 117440512; mvp4 q8_0 62390272; mvp4 q4_0 33030144
    # the fixed cost of a graph of one small product (submit to completion on the GPU's clock)
    bench "matrix-vector 256x256 q8_0 (fixed cost per graph)" B:69632 mul_mat --type q8_0 --m 1 --n 256 --k 256
    GGMLC_VK_MVQ_KERNEL=group mv4 q8_0 62390272 " (grouped kernel)"; GGMLC_VK_MVQ_KERNEL=group mv4 q4_0 33030144 " (grouped kernel)"
    for n in 2 8; do
        bench "matrix-vector 14336x4096 q4_0, $n columns" B:33030144 mul_mat --type q4_0 --m $n --n 14336 --k 4096
        GGMLC_VK_MVQ_KERNEL=group bench "matrix-vector 14336x4096 q4_0, $n columns (lanes kernel)" B:33030144 mul_mat --type q4_0 --m $n --n 14336 --k 4096
    done
fi

# ggml's own timing of the matrix products (test-backend-ops perf: each case repeated in one
# graph), when that program was built into $P/bin as for "suites"
if [[ $what == *" bench "* || $what == *" all "* ]] && command -v test-backend-ops >/dev/null; then
    say "== test-backend-ops perf -b Vulkan0 -o MUL_MAT"
    timeout ${TBO_PERF_TIMEOUT:-300} test-backend-ops perf -b Vulkan0 -o MUL_MAT 2>&1 | grep -E "MUL_MAT|GB/s|FLOPS" | tee -a "$log"
fi

if [[ $what == *" sweep "* ]]; then
    for v in ${VK_SWEEP_MV:-128,1 128,4}; do
        export GGMLC_VK_MV=$v
        mv f16 117440512 " MV=$v"; mv f32 234881024 " MV=$v"
    done
    unset GGMLC_VK_MV
    export GGMLC_VK_MVQ_KERNEL=staged  # the MVQ overrides tune mvq-staged.comp
    for v in ${VK_SWEEP_MVQ:-128,1,1024 128,2,1024 128,2,528 128,4,528 128,1,2048 64,2,1024 256,1,1024}; do
        export GGMLC_VK_MVQ=$v
        mv q8_0 62390272 " MVQ=$v"; mv q4_0 33030144 " MVQ=$v"
    done
    unset GGMLC_VK_MVQ GGMLC_VK_MVQ_KERNEL
    export GGMLC_VK_MVQ_KERNEL=lanes  # the MVQL overrides tune mvq-lanes.comp
    for v in ${VK_SWEEP_MVQL:-128,1 128,4 256,2 64,2}; do
        export GGMLC_VK_MVQL=$v
        mv q8_0 62390272 " MVQL=$v"; mv q4_0 33030144 " MVQL=$v"
    done
    unset GGMLC_VK_MVQL GGMLC_VK_MVQ_KERNEL
    for v in ${VK_SWEEP_MVQG:-256,16,0 256,32,1 128,16,1 512,32,1 256,64,1 64,4,1}; do
        export GGMLC_VK_MVQG=$v
        mv q8_0 62390272 " MVQG=$v"; mv q4_0 33030144 " MVQG=$v"
    done
    unset GGMLC_VK_MVQG
    for v in ${VK_SWEEP_MVQD:-32,2 32,4 32,2,2112 32,4,1056 64,2}; do
        export GGMLC_VK_MVQD=$v
        mv q8_0 62390272 " MVQD=$v"; mv q4_0 33030144 " MVQD=$v"
        mv4 q8_0 62390272 " MVQD=$v"; mv4 q4_0 33030144 " MVQD=$v"
        mvp4 q8_0 62390272 " MVQD=$v"; mvp4 q4_0 33030144 " MVQD=$v"
    done
    unset GGMLC_VK_MVQD
    for tile in ${VK_SWEEP_MM:-256,128,128,8,8,8 256,128,128,32,8,8 128,128,64,16,8,8 256,128,64,16,8,4 256,64,128,16,4,8}; do
        GGMLC_VK_MM_TILE=$tile bench "GEMM f32 4096^3, tile $tile" $F mul_mat --type f32 $GEMM
    done
    for fk in ${VK_SWEEP_COOPMAT_FLEX:-16 32 64}; do
        for bt in ${VK_SWEEP_BTYPE:-f32 f16}; do
            GGMLC_VK_COOPMAT_FLEX=$fk bench "GEMM f16 x $bt 4096^3, flexible coopmat FK=$fk" $F mul_mat --type f16 --btype $bt $GEMM
        done
    done
    # (WG = 32 x subgroup tiles; at most 48 KB of shared memory: 16 (BK/8 + 1) (BM + BN) STAGES bytes)
    for tile in ${VK_SWEEP_COOPMAT:-256,128,128,32,64,32,2 256,128,256,32,64,64 256,256,128,32,64,64 128,128,128,64,64,64 128,128,128,32,64,64,2 256,128,256,16,64,64,2}; do
        for bt in ${VK_SWEEP_BTYPE:-f32 f16}; do
            GGMLC_VK_COOPMAT_TILE=$tile bench "GEMM f16 x $bt 4096^3, coopmat tile $tile" $F mul_mat --type f16 --btype $bt $GEMM
        done
    done
fi

if [[ $what == *" torch "* || $what == *" all "* ]]; then
    say "== PyTorch / cuBLAS on the same GPU"
    timeout 120 python3 - <<'EOF' 2>&1 | tee -a "$log"
import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"

def timed(fn, reps=20):
    fn(); torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record(); fn(); end.record(); torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    return times[len(times) // 2]

n = 4096
for dt in (torch.float32, torch.float16):
    a = torch.randn(n, n, device=dev, dtype=dt); b = torch.randn(n, n, device=dev, dtype=dt)
    t = timed(lambda: a @ b)
    print(f"torch GEMM {dt} 4096^3 (no TF32): {t*1e3:.3f} ms, {2*n**3/t/1e12:.1f} TFLOPS")
w = torch.randn(14336, 4096, device=dev, dtype=torch.float16); x = torch.randn(4096, 1, device=dev, dtype=torch.float16)
t = timed(lambda: w @ x, 100)
print(f"torch matvec f16 14336x4096: {t*1e6:.1f} us, {w.numel()*2/t/1e9:.0f} GB/s")
src = torch.empty(1 << 30, device=dev, dtype=torch.uint8); dst = torch.empty_like(src)
t = timed(lambda: dst.copy_(src))
print(f"torch device copy 1 GiB: {2*(1<<30)/t/1e9:.0f} GB/s (read + write)")
h = src.view(torch.float16)
t = timed(lambda: h.sum(dtype=torch.float32))
print(f"torch device read (sum of 1 GiB of f16): {(1<<30)/t/1e9:.0f} GB/s")
# one kernel reading as many bytes as one mat-vec's weights (q4_0, q8_0, f16): what a single
# kernel of that size reaches, launch and ramp included
for label, nbytes in (("q4_0", 33030144), ("q8_0", 62390272), ("f16", 117440512)):
    part = h[: nbytes // 2]
    t = timed(lambda: part.sum(dtype=torch.float32), 100)
    print(f"torch device read (sum) of {nbytes} bytes ({label} weights): {t*1e6:.1f} us, {nbytes/t/1e9:.0f} GB/s")
EOF
fi

say "== summary (median GPU time of 20 runs after a warm-up)"
cat $summary | tee -a "$log"
