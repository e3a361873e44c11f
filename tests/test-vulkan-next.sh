#!/bin/sh
# test-vulkan-next.sh - test-vulkan's matrix-product cases (mm_*) on Mesa 26's
# lavapipe, which has cooperative matrices (KHR 8x8x8 fragments, flexible sizes):
# the plugin's KHR and FLEX tensor-core kernels against the CPU backend, the
# kernels Debian 12's lavapipe cannot run.  Each variant once: the default
# (FLEX for whole tiles), the KHR fragments alone, four other tilings, f32
# activations packed into f16, block-format weights dequantized into f16, and
# block-format weights read as blocks by the kernel itself (GGMLC_VK_COOPMAT_BLOCKS=2).
# Then flash attention for prompts on cooperative matrices (flash-attn-cm.comp);
# the copies and set_rows into block formats, which must give the CPU's bytes
# on a driver that fuses multiply-adds (this one does), and test-vulkan-faults,
# whose cooperative-matrix fallbacks (a kernel whose pipeline fails gives way to
# the next) need such a device.
# Skipped unless `tools/lavapipe-next.sh setup` has been run (CI runs it).

: "${GGMLC_BUILDDIR:?run through make check}"
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
next="$srcdir/tools/lavapipe-next.sh"
if ! "$next" check >/dev/null 2>&1; then
    echo "1..0 # SKIP Mesa 26 lavapipe not set up (tools/lavapipe-next.sh setup)"
    exit 0
fi
program() { # the program itself, not libtool's wrapper script
    if [ -x "$GGMLC_BUILDDIR/tests/.libs/$1" ]; then echo "$GGMLC_BUILDDIR/tests/.libs/$1"; else echo "$GGMLC_BUILDDIR/tests/$1"; fi
}
export LAVAPIPE_NEXT_LIBS="$GGMLC_BUILDDIR/.libs"

n=0
# run_tap LABEL LOG STATUS: LOG's test points, renumbered into this stream
run_tap() {
    while IFS= read -r line; do
        case $line in
        "ok "* | "not ok "*)
            n=$((n + 1))
            echo "${line%% [0-9]*} $n - $1: ${line#* - }"
            ;;
        esac
    done <"$2"
    if [ "$3" -ne 0 ]; then n=$((n + 1)); echo "not ok $n - $1: exited with status $3"; tail -5 "$2" | sed 's/^/# /'; fi
}

prog=$(program test-vulkan)
# the default (its prompt-sized Q8_0 and Q4_0 products reading the blocks themselves); the KHR fragments
# alone; 4 and 16 subgroups; two shared slices (double-buffered); f32 activations packed into f16 first,
# with the large tiles (eight 64x64 subgroup tiles); block-format weights (Q8_0 and Q4_0 too) dequantized
# into f16 for the tensor-core kernel at every column count; every product split
# along k into 3 layers of workgroups (mm-split-sum.comp adding them up); Q8_0, Q4_0, Q4_1, Q5_0, Q4_K
# and Q6_K weights read as blocks by the tensor-core kernel (FLEX for whole tiles)
set -- "" GGMLC_VK_COOPMAT_FLEX=0 GGMLC_VK_COOPMAT_TILE=32,64,64,32,32,32 GGMLC_VK_COOPMAT_TILE=128,128,128,32,32,32 \
    GGMLC_VK_COOPMAT_TILE=64,128,64,32,32,32,2 "GGMLC_VK_COOPMAT_FLEX=0 GGMLC_VK_COOPMAT_TILE=64,128,128,16,64,32,2" \
    "GGMLC_VK_COOPMAT_PACK=1 GGMLC_VK_COOPMAT_TILE=64,256,128,32,64,64" "GGMLC_VK_COOPMAT_DEQUANT=1 GGMLC_VK_COOPMAT_BLOCKS=0" GGMLC_VK_COOPMAT_SPLIT=3 GGMLC_VK_COOPMAT_BLOCKS=2
# cases_of VARIANT: the product cases a variant runs.  The default takes every one (56); the others
# take those that reach what they change: the f16 products (9) for the tilings, KHR alone, packing and
# split k, and with them the block-format ones for dequantization and blocks read in place.  All 56
# for every variant took 55 minutes of lavapipe, two at a time: the longest part of CI by far.
cases_of() {
    case $1 in
    "") echo mm_ ;;
    *DEQUANT=1* | *BLOCKS=2*) echo mm_f16,mm_q,mm_iq,mm_mxfp4 ;;
    *) echo mm_f16 ;;
    esac
}
# The variants two at a time (each lavapipe run keeps one core busy), then their results in order.
runs=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-vk-next.XXXXXX") || exit 1
i=0
for variant in "$@"; do
    i=$((i + 1))
    { env $variant GGMLC_TEST_ONLY="$(cases_of "$variant")" GGMLC_DEBUG=vulkan "$next" run "$prog" >"$runs/$i.log" 2>&1; echo $? >"$runs/$i.status"; } &
    [ $((i % 2)) -ne 0 ] || wait
done
wait
i=0
for variant in "$@"; do
    i=$((i + 1))
    log=$runs/$i.log
    st=$(cat "$runs/$i.status")
    label=${variant:-default}
    # the kernels this run must have taken: both KHR variants, and FLEX unless turned off
    want="mm_coopmat_khr_f16_f32 mm_coopmat_khr_f16_f16"
    case $variant in *FLEX=0*) ;; *) want="$want mm_coopmat_flex_f16_f32 mm_coopmat_flex_f16_f16" ;; esac
    case $variant in "") want="$want mm_coopmat_khr_q8_0_f32 mm_coopmat_khr_q4_0_f32 mm_coopmat_flex_q8_0_f32 mm_coopmat_flex_q4_0_f16" ;; esac
    case $variant in *BLOCKS=2*) want="$want mm_coopmat_khr_q8_0_f32 mm_coopmat_khr_q4_0_f32 mm_coopmat_khr_q4_1_f32 mm_coopmat_khr_q5_0_f32
        mm_coopmat_khr_q4_K_f32 mm_coopmat_khr_q6_K_f32 mm_coopmat_flex_q8_0_f32 mm_coopmat_flex_q4_0_f16" ;; esac
    case $variant in *PACK=1*) want="mm_coopmat_khr_f16_f16 mm_coopmat_flex_f16_f16 pack_f16" ;; esac
    case $variant in *SPLIT=3*) want="$want mm_split_sum" ;; esac
    case $variant in *DEQUANT=1*) want="$want dequant_q8_0_f16 dequant_q4_0_f16 dequant_q5_1_f16 dequant_q2_K_f16 dequant_q4_K_f16 dequant_q6_K_f16 dequant_iq4_xs_f16" ;; esac
    for k in $want; do
        n=$((n + 1))
        if grep -q "pipeline $k built" "$log"; then echo "ok $n - $label: $k ran"; else echo "not ok $n - $label: $k ran"; fi
    done
    grep -q "ignored: it does not fit" "$log" && { n=$((n + 1)); echo "not ok $n - $label: the tile override was refused"; }
    run_tap "$label" "$log" $st
done
rm -rf "$runs"
# flash attention for prompts on cooperative matrices (flash-attn-cm.comp) against the CPU: f16,
# f32 and bf16 K/V, heads of 64, 128 and odd sizes, causal and ALiBi masks, a soft cap, sinks
# (under the default tuning only: test-vulkan's reruns with other kernels forced run on Debian's lavapipe)
log=$(mktemp "${TMPDIR:-/tmp}/ggmlc-vk-next.XXXXXX") || exit 1
GGMLC_TEST_DEFAULTS_ONLY=1 GGMLC_TEST_ONLY=flash_attn_pp_ GGMLC_DEBUG=vulkan "$next" run "$prog" >"$log" 2>&1
st=$?
for k in fattn_cm_f16_f16 fattn_cm_f32_f32 fattn_cm_bf16_f32; do
    n=$((n + 1))
    if grep -q "pipeline $k built" "$log"; then echo "ok $n - flash_attn_pp: $k ran"; else echo "not ok $n - flash_attn_pp: $k ran"; fi
done
run_tap "flash_attn_pp cases" "$log" $st
rm -f "$log"
# the same with the keys of each tile of rows split three ways (fattn-combine.comp adding the parts
# up; some of the causal rows' splits wholly masked), which lavapipe does not take unasked, and
# tiles of 64 keys (the default takes 32)
log=$(mktemp "${TMPDIR:-/tmp}/ggmlc-vk-next.XXXXXX") || exit 1
GGMLC_VK_FA_SPLIT=3 GGMLC_VK_FA_CM=4,64 GGMLC_TEST_DEFAULTS_ONLY=1 GGMLC_TEST_ONLY=flash_attn_pp_ GGMLC_DEBUG=vulkan-ops \
    "$next" run "$prog" >"$log" 2>&1
st=$?
n=$((n + 1))
if grep -A1 "dispatch 0 fattn_cm_f16_f16" "$log" | grep -q "dispatch 1 fattn_combine"; then
    echo "ok $n - flash_attn_pp split keys: fattn_cm_f16_f16 then fattn_combine ran"
else
    echo "not ok $n - flash_attn_pp split keys: fattn_cm_f16_f16 then fattn_combine ran"
fi
run_tap "flash_attn_pp cases, split keys" "$log" $st
rm -f "$log"
for only in cpy_ set_rows; do
    log=$(mktemp "${TMPDIR:-/tmp}/ggmlc-vk-next.XXXXXX") || exit 1
    GGMLC_TEST_ONLY=$only "$next" run "$prog" >"$log" 2>&1
    run_tap "$only cases" "$log" $?
    rm -f "$log"
done
log=$(mktemp "${TMPDIR:-/tmp}/ggmlc-vk-next.XXXXXX") || exit 1
# test-vulkan-faults links the test build of the core (tests/hooks/): its folder comes first
LAVAPIPE_NEXT_LIBS="$GGMLC_BUILDDIR/tests/hooks/.libs:$LAVAPIPE_NEXT_LIBS" "$next" run "$(program test-vulkan-faults)" >"$log" 2>&1
st=$?
for fallback in "pipeline:mm_coopmat_flex: on the next kernel" "pipeline:mm_coopmat: on the next kernel" \
    "pipeline:mm_split_sum: unsplit, the CPU's result" "pipeline:pack_f16: reading f32 b, the CPU's result" \
    "pipeline:dequant_q8_0_f16: on the tiled GEMM, the CPU's result" "pipeline:mm_coopmat_khr_q8_0: on dequantized weights, the CPU's result"; do
    n=$((n + 1))
    if grep -q "^ok .*$fallback" "$log"; then echo "ok $n - faults: $fallback, checked (not skipped)"; else echo "not ok $n - faults: $fallback, checked (not skipped)"; fi
done
run_tap faults "$log" $st
rm -f "$log"
echo "1..$n"
